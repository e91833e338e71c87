$TAOTSIM sweep --lambda 5
