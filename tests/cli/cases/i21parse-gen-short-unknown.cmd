$TAOTSIM gen -o $TMP/t.json -x
