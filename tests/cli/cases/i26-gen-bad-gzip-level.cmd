$TAOTSIM gen -o $TMP/t.jsonl.gz --gzip-level 10
