$TAOTSIM gen -o $TMP/t.json --ep 16 --hot-ranks per-node:9 2>&1
