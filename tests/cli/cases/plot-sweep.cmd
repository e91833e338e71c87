src=$PWD; cd "$TMP" && "$TAOTSIM" plot "$src/tests/data/plot/sweep.json" -o out --format none && cat out/sweep_lp3.dat out/sweep_lp10.dat && grep -E '^(PLANNERS|NP|BE_|NBE)' out/sweep_lp3.gp
