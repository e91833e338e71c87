$TAOTSIM gen -o $TMP/t.jsonl --experts 8 --ep 2 --rpn 1 --topk 2 --tokens 16 --microbatches 2 --layers 1 --hot-fraction 0.25 --generator 3 && cat $TMP/t.jsonl
