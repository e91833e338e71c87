$TAOTSIM replay traces/ep16-imb50.jsonl.gz --planners taot,eplb,trtllm --traffic node --hidden-bytes 7168 --expert-mb 44
