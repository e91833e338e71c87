src=$PWD; cd "$TMP" && "$TAOTSIM" plot "$src/tests/data/plot/scaling.json" -o out --format=none && cat out/scaling_ep.dat out/scaling_imbalance.dat out/scaling_slots.dat
