# Imbalance of every record before planning and after each planner (study
# "replay", from `taotsim replay --per-record --format json`).
# Variables: DATA, TITLE, PLANNERS (space separated), NP (their number).
# DATA columns: 1 record index, 2 imbalance before (%), then one column per
# planner j = 1..NP: imbalance after that planner (%), at column 2 + j.
set title TITLE
set xlabel "record (trace order)"
set ylabel "imbalance (max load - mean) / mean (%)"
set key outside right top
set yrange [0:*]
plot DATA using 1:2 with lines lw 2 dt 2 lc rgb "black" title "before planning", \
     for [j=1:NP] DATA using 1:(column(2 + j)) with linespoints pt 7 ps 0.5 lw 1.5 title word(PLANNERS, j)
