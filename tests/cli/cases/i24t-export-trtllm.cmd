$TAOTSIM replay traces/ep16-imb50.jsonl.gz --planners eplb --export-layout $TMP/l.json --export-format trtllm -o $TMP/r.md && head -c 300 $TMP/l.json && echo && wc -l < $TMP/l.json
