src=$PWD; cd "$TMP" && "$TAOTSIM" plot "$src/tests/data/plot/table1_na.json" -o out --format none; echo "exit $?"; cat out/table1.dat out/table1_pareto_ep16_imb10.dat
