cd $TMP && $TAOTSIM gen -o t.json --ep 4 --experts 16 --tokens 32 --microbatches 2 --layers 2 --hot-fraction 0.1 2>/dev/null && $TAOTSIM index t.json
