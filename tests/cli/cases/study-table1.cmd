$TAOTSIM table1
