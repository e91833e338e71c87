$TAOTSIM gen --help
