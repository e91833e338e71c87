# Table 1, one cell (EP size, initial imbalance): residual imbalance after
# planning (x) against weighted communication cost (y), one point per planner
# in its colour and shape with error bars (std over records) both ways; the
# paper's point for the same planner hollow; the Pareto front of ours (no
# other planner both less imbalanced and cheaper) dashed.
# Variables: DATA, TITLE, PLANNERS, NP, COLORS, POINTS (the planners' styles,
# filled; POINTS - 1 is the hollow twin), PAPER (indices j of the planners with
# a paper point).
# DATA index 0, one row per planner j = 1..NP: 1 planner, 2 residual imbalance
# mean (%), 3 its std, 4 weighted mean, 5 its std, 6 the paper's residual
# imbalance (%), 7 the paper's weighted cost. Index 1: the front, columns
# residual imbalance (%), weighted.
set title TITLE
set xlabel "residual imbalance after planning (%)"
set ylabel "weighted cost per record (intra + λ_eval × inter transfers)"
set grid xtics ytics lc rgb "gray85"
set xrange [0:*]
set yrange [0:*]
set offsets 0, graph 0.06, graph 0.06, 0
eval KEY_ABOVE(NP + 1 + (words(PAPER) > 0), (KEY_LEN > 14 ? KEY_LEN : 14))
# The paper's part of the plot is a string, as gnuplot evaluates the body of
# an empty "for" once.
P(k) = int(word(PAPER, k))
PAPER_PLOT = words(PAPER) == 0 ? '' : ', for [k=1:words(PAPER)] DATA index 0 every ::(P(k) - 1)::(P(k) - 1) ' . \
    'using 6:7 with points pt (int(word(POINTS, P(k))) - 1) ps 1.8 lw 1.5 lc rgb word(COLORS, P(k)) notitle, ' . \
    'NaN with points pt 6 ps 1.6 lw 1.5 lc rgb "gray30" title "paper (hollow)"'
eval 'plot DATA index 1 using 1:2 with lines dt 2 lw 1.2 lc rgb "gray50" title "Pareto front", ' . \
    'for [j=1:NP] DATA index 0 every ::(j - 1)::(j - 1) using 2:4:3:5 with xyerrorbars ' . \
    'pt int(word(POINTS, j)) ps 1.6 lw 1.3 lc rgb word(COLORS, j) title word(PLANNERS, j)' . PAPER_PLOT
