# λ sweep: weighted communication cost against the λ the evaluator charges
# (λ_eval), at one planner λ (λ_plan), one curve per planner (mean, error bar:
# the result's std). Dashed vertical lines mark break-even λ*: where two
# planners' costs are equal (model.md).
# Variables: DATA, TITLE, PLANNERS, NP, COLORS, POINTS (the planners' styles),
# NBE (break-even marks), BE_X1.., BE_LABEL1.. (their λ* and labels).
# DATA columns: 1 λ_eval, then two per planner j = 1..NP from column
# 2 + 2 (j - 1): weighted mean, weighted std.
set title TITLE
set xlabel "λ_eval: cost of one cross-node expert transfer (one intra-node transfer = 1)"
set ylabel "weighted cost per record (intra + λ_eval × inter transfers)"
eval KEY_ABOVE(NP, KEY_LEN)
set yrange [0:*]
set autoscale xfix
set offsets graph 0.03, graph 0.03, 0, 0
do for [i=1:NBE] {
    BE_AT = value(sprintf("BE_X%d", i))
    set arrow i from BE_AT, graph 0 to BE_AT, graph 1 nohead dt 2 lw 1.5 lc rgb "gray40"
    set label i value(sprintf("BE_LABEL%d", i)) at BE_AT, graph (0.97 - 0.06 * (i - 1)) left offset 0.6, 0 textcolor rgb "gray20"
}
plot for [j=1:NP] DATA using 1:(column(2 + 2 * (j - 1))):(column(3 + 2 * (j - 1))) \
         with yerrorlines pt int(word(POINTS, j)) ps 1.2 lw 1.5 lc rgb word(COLORS, j) title word(PLANNERS, j)
