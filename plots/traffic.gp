# traffic: one planner's token traffic matrix before (left) and after (right)
# its plans, summed over the replay's records (replay --traffic --plots).
# Rows: the source node or rank; columns: the node or rank that computes the
# tokens; the diagonal stays local. One colour scale for both panels, its key
# (the colour box, labelled) beside each.
# Variables: DATA, TITLE, UNIT ("node" or "rank"), N (units), CBMAX.
# DATA columns: 1 source (y), 2 destination (x), 3 tokens before, 4 tokens after; a
# blank line after each source.
set multiplot title TITLE
set xrange [-0.5:N - 0.5]
set yrange [N - 0.5:-0.5]
set cbrange [CBMIN:CBMAX > CBMIN ? CBMAX : CBMIN + 1]
set format cb "%.3s%c"
# the key: what the colour box beside each panel counts, written above it
set label 10 "tokens" at graph 1.09, graph 1.05 center
if (N <= 16) { set xtics 1; set ytics 1 }
set palette defined (0 "#ffffff", 0.25 "#fde0c5", 0.6 "#f08a4b", 1 "#8c1c13")
set xlabel "computing " . UNIT
set ylabel "source " . UNIT
set border 15
set tics out
unset grid
unset key
set size square
# each panel placed by hand: room on its right for the colour box and its tick labels
set lmargin at screen 0.1
set rmargin at screen 0.38
set title "before"
plot DATA using 2:1:3 with image
set lmargin at screen 0.6
set rmargin at screen 0.88
set title "after"
plot DATA using 2:1:4 with image
unset multiplot
