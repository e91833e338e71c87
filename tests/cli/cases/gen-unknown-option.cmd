$TAOTSIM gen -o $TMP/t.json --bogus 1
