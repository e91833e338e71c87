"$TAOTSIM" plot tests/data/plot/missing_field.json -o "$TMP/out" 2>&1; status=$?; test -e "$TMP/out" && echo "output written"; exit $status
