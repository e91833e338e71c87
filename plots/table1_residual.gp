# Table 1: residual imbalance after planning per (EP size, initial imbalance)
# group, one bar per planner (mean, error bar: std).
# Variables and DATA columns as in table1_weighted.gp; the residual imbalance
# mean (%) is column C(j, 2) and its std C(j, 3).
C(j, k) = 4 + 5 * (j - 1) + k
BW = 0.8 / NP
X(j) = column(0) + (j - (NP + 1) / 2.0) * BW
set title TITLE
set xlabel "EP size, initial imbalance"
set ylabel "residual imbalance after planning (%)"
eval "set xtics " . XTICS
set xrange [-0.6:NG - 0.4]
set yrange [0:*]
set boxwidth BW absolute
set style fill solid 0.8 border -1
set errorbars lc rgb "black"
set key outside right top
plot for [j=1:NP] DATA using (X(j)):(column(C(j, 2))):(column(C(j, 3))) with boxerrorbars title word(PLANNERS, j)
