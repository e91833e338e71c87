$TAOTSIM gen -o $TMP/t.json --experts 8 --ep 2 --rpn 1 --topk 2 --tokens 16 --microbatches 2 --layers 1 --hot-fraction 0.25 && cat $TMP/t.json
