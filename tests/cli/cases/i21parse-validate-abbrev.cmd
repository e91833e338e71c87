$TAOTSIM validate --data=x traces/ep16-imb10.jsonl.gz
