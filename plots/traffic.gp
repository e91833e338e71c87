# traffic: one planner's token traffic matrix before (left) and after (right)
# its plans, summed over the replay's records (replay --traffic --plots).
# Rows: the source node or rank; columns: the node or rank that computes the
# tokens; the diagonal stays local. One colour scale for both panels.
# Variables: DATA, TITLE, UNIT ("node" or "rank"), N (units), CBMAX.
# DATA columns: 1 source (y), 2 destination (x), 3 tokens before, 4 tokens after; a
# blank line after each source.
set multiplot layout 1, 2 title TITLE
set xrange [-0.5:N - 0.5]
set yrange [N - 0.5:-0.5]
set cbrange [CBMIN:CBMAX > CBMIN ? CBMAX : CBMIN + 1]
set format cb "%.3s%c"
if (N <= 16) { set xtics 1; set ytics 1 }
set palette defined (0 "#ffffff", 0.25 "#fde0c5", 0.6 "#f08a4b", 1 "#8c1c13")
set xlabel "computing " . UNIT
set ylabel "source " . UNIT
set border 15
set tics out
unset grid
unset key
set size square
set title "before"
plot DATA using 2:1:3 with image
set title "after"
plot DATA using 2:1:4 with image
unset multiplot
