src=$PWD; cd "$TMP" && "$TAOTSIM" plot "$src/tests/data/plot/ablation.json" -o out --format none && cat out/ablation.dat
