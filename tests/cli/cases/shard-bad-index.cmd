$TAOTSIM sweep traces/ep16-imb30.jsonl.gz --shard 3/3 -o $TMP/out.json; s=$?; test -e $TMP/out.json && echo written; exit $s
