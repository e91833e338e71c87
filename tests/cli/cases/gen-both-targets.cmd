$TAOTSIM gen -o $TMP/t.json --imbalance 0.3 --hot-fraction 0.1
