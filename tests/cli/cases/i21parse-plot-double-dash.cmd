printf "not json" | $TAOTSIM plot --format none -o $TMP/p -- -
