$TAOTSIM table1 --help | grep -o "DIR/ep[^ ]*"
