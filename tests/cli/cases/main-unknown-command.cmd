$TAOTSIM frobnicate
