$TAOTSIM fit --help
