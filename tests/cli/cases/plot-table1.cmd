src=$PWD; cd "$TMP" && TAOTSIM_GNUPLOT=/nonexistent "$TAOTSIM" plot "$src/tests/data/plot/table1.json" -o out --format none 2>&1 && cat out/table1.dat
