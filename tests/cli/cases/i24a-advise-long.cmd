$TAOTSIM advise traces/ep32-drift-long.jsonl.gz --planners eplb,trtllm --slot-list 1 --intervals 8,128,1000 --histories prev -j 2
