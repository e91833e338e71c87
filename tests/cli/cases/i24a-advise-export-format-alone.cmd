$TAOTSIM advise traces/ep16-imb50.jsonl.gz --export-format trtllm
