$TAOTSIM replay traces/ep16-imb50.jsonl.gz --planners taot,echo --format json | grep -v "\"version\""
