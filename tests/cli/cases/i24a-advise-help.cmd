$TAOTSIM advise --help
