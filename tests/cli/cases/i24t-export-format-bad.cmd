$TAOTSIM replay traces/ep16-imb50.jsonl.gz --planners eplb --export-layout $TMP/l.json --export-format vllm
