$TAOTSIM scaling --slots 7
