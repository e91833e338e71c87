# Table 1: weighted communication cost per (EP size, initial imbalance) group,
# one bar per planner in its colour (mean, error bar: std), the paper's values
# as black diamonds. Two-level x axis: the imbalance under each group, the EP
# size under each run of groups.
# Variables: DATA, TITLE, PLANNERS, NP, COLORS, POINTS (the planners' styles),
# NG (groups), GX (their x positions), XTICS (imbalance tick labels), XMIN,
# XMAX, OUTER_X and OUTER_LABELS (the EP labels and their x), SEPS (x of the
# lines between EP sizes), PAPER (indices j of the planners with paper values).
# DATA columns: 1 group label, 2 EP size, 3 initial imbalance (%), then six
# per planner j = 1..NP from column C(j, 0) = 4 + 6 (j - 1): weighted mean,
# weighted std, residual imbalance mean (%), its std (%), paper weighted,
# paper residual imbalance (%).
C(j, k) = 4 + 6 * (j - 1) + k
BW = 0.8 / NP
X(j) = real(word(GX, int(column(0)) + 1)) + (j - (NP + 1) / 2.0) * BW
set title TITLE
set ylabel "weighted cost per record (intra + λ_eval × inter transfers)"
set xrange [XMIN:XMAX]
set yrange [0:*]
eval "set xtics " . XTICS
set xtics scale 0
do for [i=1:words(OUTER_LABELS)] {
    set label word(OUTER_LABELS, i) at real(word(OUTER_X, i)), graph 0 center offset 0, -2.4 font ",13"
}
do for [i=1:words(SEPS)] {
    set arrow from real(word(SEPS, i)), graph 0 to real(word(SEPS, i)), graph 1 nohead dt 3 lc rgb "gray60"
}
set xlabel "initial imbalance, by EP size" offset 0, -1.6
set bmargin 6.5
eval KEY_ABOVE(NP + (words(PAPER) > 0), (KEY_LEN > 5 ? KEY_LEN : 5))
set boxwidth BW absolute
set style fill solid 0.85 border lc rgb "gray20"
set errorbars lc rgb "black"
# Optional parts of the plot are strings, as gnuplot evaluates the body of an
# empty "for" once.
PAPER_PLOT = words(PAPER) == 0 ? '' : ', for [k=1:words(PAPER)] DATA using (X(int(word(PAPER, k)))):' . \
    '(column(C(int(word(PAPER, k)), 4))) with points pt 13 ps 1.3 lc rgb "black" title (k == 1 ? "paper" : "")'
eval 'plot for [j=1:NP] DATA using (X(j)):(column(C(j, 0))):(column(C(j, 1))) with boxerrorbars ' . \
    'lc rgb word(COLORS, j) title word(PLANNERS, j)' . PAPER_PLOT
