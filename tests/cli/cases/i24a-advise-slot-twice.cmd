$TAOTSIM advise traces/ep16-imb50.jsonl.gz --slot-list 1,2,1
