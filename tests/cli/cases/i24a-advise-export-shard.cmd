$TAOTSIM advise traces/ep16-imb50.jsonl.gz --shard 0/2 --export-layout $TMP/l.json
