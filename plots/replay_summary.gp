# One metric of a replay per planner, from the summaries (study "replay"
# without --per-record): a candlestick per planner, whiskers from min to max,
# the box from the median (p50, drawn as a thick line) to p95, a point at the
# mean; "before planning" first, in grey, where the metric has such a value.
# Variables: DATA, TITLE, YLABEL, NB (the boxes).
# DATA columns: 1 x, 2 label, 3 colour (0xRRGGBB as an integer), 4 min,
# 5 p50, 6 p95, 7 max, 8 mean.
set title TITLE
set ylabel YLABEL
set xrange [-0.6:NB - 0.4]
set yrange [0:*]
set xtics scale 0
set boxwidth 0.5 absolute
set style fill solid 0.3 border
set key off
plot DATA using 1:5:4:7:6:3:xtic(2) with candlesticks lc rgb variable lw 1.5 whiskerbars 0.5, \
     DATA using 1:5:5:5:5:3 with candlesticks lc rgb variable lw 3, \
     DATA using 1:8:3 with points pt 7 ps 1.3 lc rgb variable
