$TAOTSIM replay --help
