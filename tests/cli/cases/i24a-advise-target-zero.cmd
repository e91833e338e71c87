$TAOTSIM advise traces/ep16-imb50.jsonl.gz --target-balancedness 0
