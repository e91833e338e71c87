$TAOTSIM replay traces/ep16-imb50.jsonl.gz --planners none,taot --traffic node --format csv
