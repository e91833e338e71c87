$TAOTSIM replay traces/ep16-imb50.jsonl.gz --planners eplb --export-format trtllm
