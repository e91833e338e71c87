$TAOTSIM gen --progress -o $TMP/t.jsonl --ep 4 --experts 8 --tokens 16 --microbatches 3 --layers 2 --hot-fraction 0.1 2>&1 >/dev/null | sed 's/ [0-9.]*s$//' | grep "^gen:"
