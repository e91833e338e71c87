$TAOTSIM gen -o $TMP/t.jsonl --generator 4
