"$TAOTSIM" plot --help
