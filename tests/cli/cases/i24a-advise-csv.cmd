$TAOTSIM advise traces/ep16-imb50.jsonl.gz --planners eplb,trtllm,swift,lplb --slot-list 2 --intervals 4 --histories prev,oracle,none --format csv -j 1
