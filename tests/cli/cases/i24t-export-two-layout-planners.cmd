$TAOTSIM replay traces/ep16-imb50.jsonl.gz --planners eplb,swift --export-layout $TMP/l.json
