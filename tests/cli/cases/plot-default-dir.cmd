mkdir "$TMP/results" && cp tests/data/plot/ablation.json "$TMP/results/abl.json" && cd "$TMP" && "$TAOTSIM" plot results/abl.json --format none && ls results/abl-plots
