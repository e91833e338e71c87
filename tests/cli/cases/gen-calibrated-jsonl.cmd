$TAOTSIM gen -o $TMP/t.jsonl --experts 16 --ep 4 --rpn 2 --topk 2 --tokens 256 --microbatches 2 --layers 2 --imbalance 0.5 --seed 5 && cat $TMP/t.jsonl
