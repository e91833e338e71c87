{ $TAOTSIM table1 --regime no-such-regime; echo "status $?"; } 2>&1 | sed "s#$PWD#ROOT#g"
