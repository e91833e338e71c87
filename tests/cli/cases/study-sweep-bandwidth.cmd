$TAOTSIM sweep traces/ep16-imb30.jsonl.gz --lambda-from-bandwidth 400,25 --planners taot,lplb --format csv
