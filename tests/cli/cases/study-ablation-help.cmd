$TAOTSIM ablation --help
