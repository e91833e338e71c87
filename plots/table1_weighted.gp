# Table 1: weighted communication cost per (EP size, initial imbalance) group,
# one bar per planner (mean, error bar: std), the paper's values
# as black diamonds.
# Variables: DATA, TITLE, PLANNERS, NP, NG (groups), XTICS (the group tick
# labels), PAPER (indices j of the planners that have paper values).
# DATA columns: 1 group label, 2 EP size, 3 initial imbalance (%), then five
# per planner j = 1..NP from column C(j, 0) = 4 + 5 (j - 1): weighted mean,
# weighted std, residual imbalance mean (%), its std (%), paper weighted.
C(j, k) = 4 + 5 * (j - 1) + k
BW = 0.8 / NP
X(j) = column(0) + (j - (NP + 1) / 2.0) * BW
set title TITLE
set xlabel "EP size, initial imbalance"
set ylabel "weighted cost per record (intra + λ_eval × inter transfers)"
eval "set xtics " . XTICS
set xrange [-0.6:NG - 0.4]
set yrange [0:*]
set boxwidth BW absolute
set style fill solid 0.8 border -1
set errorbars lc rgb "black"
set key outside right top
plot for [j=1:NP] DATA using (X(j)):(column(C(j, 0))):(column(C(j, 1))) with boxerrorbars title word(PLANNERS, j), \
     for [k=1:words(PAPER)] DATA using (X(int(word(PAPER, k)))):(column(C(int(word(PAPER, k)), 4))) \
         with points pt 13 ps 1.6 lc rgb "black" title (k == 1 ? "paper (Table 1)" : "")
