$TAOTSIM gen --experts=16 --ep=4 --topk=2 --tokens=8 --microbatches=1 --layers=1 --hot-fraction=0.2 -o$TMP/t.jsonl 2>&1 | sed "s/, [0-9.]* s$//; s#$TMP#TMP#"; cat $TMP/t.jsonl | head -c 200
