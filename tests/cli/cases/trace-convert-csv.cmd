{ $TAOTSIM convert tests/data/trace/routing.csv $TMP/r.jsonl --ep 4 --dataset gsm8k && cat $TMP/r.jsonl; } 2>&1 | sed "s#$TMP/##g"
