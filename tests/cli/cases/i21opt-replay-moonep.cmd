$TAOTSIM replay traces/ep16-imb50.jsonl.gz --planners moonep --slots 8
