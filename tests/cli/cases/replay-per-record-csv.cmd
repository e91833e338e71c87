$TAOTSIM replay traces/ep16-imb10.jsonl.gz --planners taot,llep --per-record --format csv
