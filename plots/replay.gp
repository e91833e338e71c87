# Imbalance of every record before planning and after each planner (study
# "replay", from `taotsim replay --per-record --format json`).
# Variables: DATA, TITLE, PLANNERS (space separated), NP (their number),
# COLORS, POINTS (the planners' styles), BEFORE_TITLE (the "before planning"
# legend entry, naming the planners whose line lies exactly on it).
# DATA columns: 1 record index, 2 imbalance before (%), then one column per
# planner j = 1..NP: imbalance after that planner (%), at column 2 + j.
set title TITLE
set xlabel "record (trace order)"
set ylabel "imbalance (max load - mean) / mean (%)"
if (!exists("BEFORE_TITLE")) BEFORE_TITLE = "before planning"
eval KEY_ABOVE(NP + 1, (KEY_LEN > strlen(BEFORE_TITLE) ? KEY_LEN : strlen(BEFORE_TITLE)))
set yrange [0:*]
set autoscale xfix
set offsets graph 0.01, graph 0.01, 0, 0
# "before planning" is drawn last, dashed and black, so that a planner's line
# lying on it (a planner that moved nothing) shows through its gaps.
plot for [j=1:NP] DATA using 1:(column(2 + j)) with linespoints pt int(word(POINTS, j)) ps 0.6 lw 1.5 \
         lc rgb word(COLORS, j) title word(PLANNERS, j), \
     DATA using 1:2 with lines lw 2.5 dt (8, 6) lc rgb "black" title BEFORE_TITLE
