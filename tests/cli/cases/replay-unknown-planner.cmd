$TAOTSIM replay traces/ep16-imb30.jsonl.gz --planners bogus
