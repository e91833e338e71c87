$TAOTSIM replay traces/ep32-imb30.jsonl.gz --planners taot,echo --step-model --inter-gbps 12.5
