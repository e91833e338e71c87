$TAOTSIM table1 --help
