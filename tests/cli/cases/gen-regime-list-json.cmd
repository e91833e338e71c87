$TAOTSIM gen -o $TMP/t.json --experts 16 --ep 4 --rpn 2 --topk 2 --tokens 16 --microbatches 1 --layers 2 --hot-fraction 0.5 --hot-ranks 3,0 --hot-experts 2 --hot-skew 1.5 && cat $TMP/t.json
