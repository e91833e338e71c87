$TAOTSIM fit --hot-experts 8 2>&1
