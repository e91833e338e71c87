$TAOTSIM replay traces/ep16-imb50.jsonl.gz --traffic node --hidden-bytes 0
