$TAOTSIM gen -o $TMP/t.json --ep 4 --experts 8 --microbatches 2 --layers 1 --hot-fraction 0.1 --hot-move -3
