$TAOTSIM convert traces/ep16-imb10.jsonl.gz --format json $TMP/out.jsonl
