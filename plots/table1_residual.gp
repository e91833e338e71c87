# Table 1: residual imbalance after planning per (EP size, initial imbalance)
# group, one bar per planner in its colour (mean, error bar: std), on the
# two-level axis of table1_weighted.gp.
# Variables and DATA columns as in table1_weighted.gp (PAPER aside); the
# residual imbalance mean (%) is column C(j, 2) and its std C(j, 3).
C(j, k) = 4 + 5 * (j - 1) + k
BW = 0.8 / NP
X(j) = real(word(GX, int(column(0)) + 1)) + (j - (NP + 1) / 2.0) * BW
set title TITLE
set ylabel "residual imbalance after planning (%)"
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
eval KEY_ABOVE(NP, KEY_LEN)
set boxwidth BW absolute
set style fill solid 0.85 border lc rgb "gray20"
set errorbars lc rgb "black"
plot for [j=1:NP] DATA using (X(j)):(column(C(j, 2))):(column(C(j, 3))) with boxerrorbars \
         lc rgb word(COLORS, j) title word(PLANNERS, j)
