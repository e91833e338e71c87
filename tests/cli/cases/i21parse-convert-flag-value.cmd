$TAOTSIM convert --help=yes
