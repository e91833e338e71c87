$TAOTSIM replay traces/ep16-imb30.jsonl.gz --planners lplb --slots 1
