# Scaling: residual imbalance after planning against one axis of the study (EP
# size, initial imbalance or guest slots per rank), one curve per planner
# (mean, error bar: std).
# Variables: DATA, TITLE, XLABEL, LOGX (1: log2 x axis), PLANNERS, NP, COLORS,
# POINTS (the planners' styles).
# DATA columns: 1 the axis value, then four per planner j = 1..NP from column
# C(j, 0) = 2 + 4 (j - 1): residual imbalance mean (%), its std (%), weighted
# cost mean, its std.
C(j, k) = 2 + 4 * (j - 1) + k
set title TITLE
set xlabel XLABEL
set ylabel "residual imbalance after planning (%)"
if (LOGX) set logscale x 2
set offsets graph 0.03, graph 0.03, 0, 0
eval KEY_ABOVE(NP, KEY_LEN)
set yrange [0:*]
plot for [j=1:NP] DATA using 1:(column(C(j, 0))):(column(C(j, 1))) with yerrorlines pt int(word(POINTS, j)) ps 1.2 lw 1.5 \
         lc rgb word(COLORS, j) title word(PLANNERS, j)
