$TAOTSIM replay traces/ep16-imb50.jsonl.gz --planners fm=fastermoe:--fastermoe-model-us=50 --dump-plans $TMP/plans.jsonl > /dev/null && wc -l < $TMP/plans.jsonl && head -n 1 $TMP/plans.jsonl
