"$TAOTSIM" plot tests/data/plot/unknown_study.json -o "$TMP/out" 2>&1; status=$?; test -e "$TMP/out" && echo "output written"; exit $status
