$TAOTSIM scaling --help
