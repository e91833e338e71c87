$TAOTSIM advise traces/ep16-imb50.jsonl.gz traces/ep32-imb50.jsonl.gz
