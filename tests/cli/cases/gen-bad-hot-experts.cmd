$TAOTSIM gen -o $TMP/t.json --ep 16 --hot-experts 9 2>&1
