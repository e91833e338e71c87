$TAOTSIM sweep --help | grep -e "--lambda" -e "--slots"
