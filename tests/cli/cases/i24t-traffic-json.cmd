$TAOTSIM replay traces/ep16-imb50.jsonl.gz --planners swift --traffic node --format json | python3 -c 'import json,sys; print(json.dumps(json.load(sys.stdin)["traffic"], indent=1))'
