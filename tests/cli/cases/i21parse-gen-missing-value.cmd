$TAOTSIM gen -o $TMP/t.json --seed
