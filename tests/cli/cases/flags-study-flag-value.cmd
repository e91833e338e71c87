$TAOTSIM sweep --std=yes
