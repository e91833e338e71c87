src=$PWD; cd "$TMP" && "$TAOTSIM" plot - --format none < "$src/tests/data/plot/replay.json" && cat taotsim-plots/replay.dat
