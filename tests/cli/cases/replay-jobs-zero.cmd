$TAOTSIM replay traces/ep16-imb30.jsonl.gz -j 0 -o $TMP/out.md; s=$?; test -e $TMP/out.md && echo written; exit $s
