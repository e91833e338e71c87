$TAOTSIM replay traces/ep16-imb50.jsonl.gz --traffic-out $TMP/t.json
