$TAOTSIM fit --hot-ranks 0,20 2>&1
