$TAOTSIM advise traces/no-such-trace.jsonl.gz
