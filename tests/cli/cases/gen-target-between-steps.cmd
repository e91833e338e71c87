mkdir $TMP/out && $TAOTSIM gen -o $TMP/out/t.jsonl --experts 16 --ep 4 --rpn 2 --topk 2 --tokens 64 --microbatches 2 --layers 2 --imbalance 0.5 --seed 5; s=$?; ls $TMP/out; exit $s
