$TAOTSIM merge --help
