# Scaling: weighted communication cost against one axis of the study (EP size,
# initial imbalance or guest slots per rank), one curve per planner (mean,
# error bar: std).
# Variables and DATA columns as in scaling_residual.gp; the weighted cost mean
# is column C(j, 2) and its std C(j, 3).
C(j, k) = 2 + 4 * (j - 1) + k
set title TITLE
set xlabel XLABEL
set ylabel "weighted cost per record (intra + λ_eval × inter transfers)"
if (LOGX) set logscale x 2
set offsets graph 0.03, graph 0.03, 0, 0
eval KEY_ABOVE(NP, KEY_LEN)
set yrange [0:*]
plot for [j=1:NP] DATA using 1:(column(C(j, 2))):(column(C(j, 3))) with yerrorlines pt int(word(POINTS, j)) ps 1.2 lw 1.5 \
         lc rgb word(COLORS, j) title word(PLANNERS, j)
