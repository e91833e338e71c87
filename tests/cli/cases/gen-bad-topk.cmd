$TAOTSIM gen -o $TMP/t.json --topk 0
