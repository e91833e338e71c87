$TAOTSIM gen --ep 4
