$TAOTSIM gen -o $TMP/t.csv --experts 8 --ep 2 --topk 2 --tokens 16 --microbatches 1 --layers 1 2>$TMP/e; s=$?; sed "s#$TMP/#\$TMP/#" $TMP/e >&2; exit $s
