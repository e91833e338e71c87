$TAOTSIM sweep --help
