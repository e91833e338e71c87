# Ablation (the paper's Table 2): expert transfers per record for each
# combination of TAOT's flow hint (Phase 1) and communication cost (Phase 2):
# bars of intra-node, inter-node and weighted transfers (mean, error bar: the
# result's std), the paper's values as black diamonds.
# Variables: DATA, TITLE, NG (combinations), XTICS (their tick labels), PAPER
# (indices s of the series that have paper values).
# DATA columns: 1 combination label, 2 flow hint (0/1), 3 comm cost (0/1), then
# three per series s = 1 intra, 2 inter, 3 weighted from column C(s, 0) =
# 4 + 3 (s - 1): mean, std, paper value.
SERIES = "intra-node inter-node weighted"
NS = 3
C(s, k) = 4 + 3 * (s - 1) + k
BW = 0.8 / NS
X(s) = column(0) + (s - (NS + 1) / 2.0) * BW
set title TITLE
set xlabel "TAOT phases switched on or off" offset 0, -0.6
set bmargin 5
set ylabel "expert transfers per record (weighted: intra + λ_eval × inter)"
eval "set xtics " . XTICS
set xrange [-0.6:NG - 0.4]
set yrange [0:*]
set boxwidth BW absolute
set style fill solid 0.8 border -1
set errorbars lc rgb "black"
set key outside right top
plot for [s=1:NS] DATA using (X(s)):(column(C(s, 0))):(column(C(s, 1))) with boxerrorbars title word(SERIES, s), \
     for [k=1:words(PAPER)] DATA using (X(int(word(PAPER, k)))):(column(C(int(word(PAPER, k)), 2))) \
         with points pt 13 ps 1.6 lc rgb "black" title (k == 1 ? "paper (Table 2)" : "")
