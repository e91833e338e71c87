$TAOTSIM advise traces/ep16-imb50.jsonl.gz --planners none,ultraep --slot-list 1 --target-balancedness 1
