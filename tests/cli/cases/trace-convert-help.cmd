$TAOTSIM convert --help
