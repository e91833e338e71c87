$TAOTSIM gen --ep 1 --experts 8 --microbatches 2 --layers 1 --imbalance 0 -o $TMP/r1.jsonl 2>/dev/null && $TAOTSIM replay $TMP/r1.jsonl --format csv
