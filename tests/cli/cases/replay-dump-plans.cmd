$TAOTSIM replay traces/ep16-imb70.jsonl.gz --planners echo --dump-plans $TMP/plans.jsonl > /dev/null && wc -l < $TMP/plans.jsonl && head -c 300 $TMP/plans.jsonl
