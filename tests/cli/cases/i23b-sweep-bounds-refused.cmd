$TAOTSIM sweep --bounds
