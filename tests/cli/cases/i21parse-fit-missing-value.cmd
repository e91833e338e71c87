$TAOTSIM fit --top
