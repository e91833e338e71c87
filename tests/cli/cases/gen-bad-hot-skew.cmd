$TAOTSIM gen -o $TMP/t.json --hot-skew -1 2>&1
