$TAOTSIM gen -o $TMP/t.json --ep 16 --hot-ranks 0,16 2>&1
