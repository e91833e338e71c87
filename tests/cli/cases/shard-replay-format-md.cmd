$TAOTSIM replay traces/ep16-imb30.jsonl.gz --shard 0/2 --format md -o $TMP/out.md; s=$?; test -e $TMP/out.md && echo written; exit $s
