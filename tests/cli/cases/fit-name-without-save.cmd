$TAOTSIM fit --name x 2>&1
