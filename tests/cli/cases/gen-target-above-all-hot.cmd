mkdir $TMP/out && $TAOTSIM gen -o $TMP/out/t.jsonl --experts 16 --ep 4 --topk 2 --tokens 64 --microbatches 2 --layers 2 --imbalance 3.5; s=$?; ls $TMP/out; exit $s
