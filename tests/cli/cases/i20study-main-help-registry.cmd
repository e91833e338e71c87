$TAOTSIM --help | sed -n "/^Planners:/,/^$/p"
