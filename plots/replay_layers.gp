# Balancedness per layer (study "replay" with --by-layer): for each layer, the
# mean over its records of mean load / max load over the ranks, before
# planning (black, dashed) and after each planner (its colour, with points);
# vLLM's ratio of sums over the layer's records after each planner as a thin
# dotted line of the same colour. 1 is perfectly even.
# Variables: DATA, TITLE, PLANNERS, NP, COLORS, POINTS, NL (the layers).
# DATA columns: 1 layer, 2 before, then two per planner j = 1..NP from column
# 3 + 2 (j - 1): balancedness after (mean over records), vLLM's form after.
set title TITLE
set xlabel "layer"
set ylabel "balancedness: mean load / max load"
VLLM_TITLE = "dotted: vLLM's form"
eval KEY_ABOVE(NP + 2, (KEY_LEN > strlen(VLLM_TITLE) ? KEY_LEN : strlen(VLLM_TITLE)))
if (NL <= 24) set xtics 1
set yrange [0:1.05]
set autoscale xfix
set offsets graph 0.02, graph 0.02, 0, 0
plot for [j=1:NP] DATA using 1:(column(3 + 2 * (j - 1))) with linespoints pt int(word(POINTS, j)) ps 0.8 \
         lw 1.5 lc rgb word(COLORS, j) title word(PLANNERS, j), \
     for [j=1:NP] DATA using 1:(column(4 + 2 * (j - 1))) with lines lw 1 dt 3 lc rgb word(COLORS, j) \
         title (j == 1 ? VLLM_TITLE : ""), \
     DATA using 1:2 with lines lw 2.5 dt (8, 6) lc rgb "black" title "before planning"
