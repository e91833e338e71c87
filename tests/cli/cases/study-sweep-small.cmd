$TAOTSIM sweep traces/ep16-imb30.jsonl.gz --lambda-plan 1,3 --lambda-eval 1,3,10
