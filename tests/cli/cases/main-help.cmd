$TAOTSIM --help
