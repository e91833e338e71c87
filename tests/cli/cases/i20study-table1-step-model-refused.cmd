$TAOTSIM table1 --step-model -o $TMP/t.md; s=$?; test -e $TMP/t.md && echo LEFT; exit $s
