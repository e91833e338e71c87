$TAOTSIM replay traces/ep16-imb50.jsonl.gz --traffic node --shard 0/2
