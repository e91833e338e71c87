$TAOTSIM replay traces/ep16-imb50.jsonl.gz --planners trtllm --export-layout $TMP/l.json -o $TMP/r.md && head -c 300 $TMP/l.json && echo && wc -l < $TMP/l.json
