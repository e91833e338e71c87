$TAOTSIM validate --help
