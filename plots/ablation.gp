# Ablation (the paper's Table 2): expert transfers per record for each
# combination of TAOT's flow hint (Phase 1) and communication cost (Phase 2):
# bars of intra-node, inter-node and weighted transfers in the planner's colour
# (light, medium, full shade; mean, error bar: the result's std), the paper's
# values as black diamonds.
# Variables: DATA, TITLE, PLANNERS, NP, COLORS, POINTS (the planners' styles),
# NG (combinations), XTICS (their tick labels), PAPER (indices s of the series
# that have paper values), GROUP_RGB (each combination's planner colour as a
# number 0xRRGGBB).
# DATA columns: 1 combination label, 2 flow hint (0/1), 3 comm cost (0/1), then
# three per series s = 1 intra, 2 inter, 3 weighted from column C(s, 0) =
# 4 + 3 (s - 1): mean, std, paper value.
SERIES = "intra-node inter-node weighted"
SHADE = "0.35 0.65 1.0"
NS = 3
C(s, k) = 4 + 3 * (s - 1) + k
BW = 0.8 / NS
X(s) = column(0) + (s - (NS + 1) / 2.0) * BW
RGB(row) = int(word(GROUP_RGB, int(row) + 1))
# The key's shades: the one planner's colour, or grey when there are several.
KEY_COLOR = NP == 1 ? word(COLORS, 1) : "#606060"
set title TITLE
set xlabel "TAOT phases switched on or off" offset 0, -0.6
set bmargin 5
set ylabel "expert transfers per record (weighted: intra + λ_eval × inter)"
eval "set xtics " . XTICS
set xtics scale 0
set xrange [-0.6:NG - 0.4]
set yrange [0:*]
set boxwidth BW absolute
set errorbars lc rgb "black"
eval KEY_ABOVE(3 + (words(PAPER) > 0) + (NP > 1 ? NP : 0), (KEY_LEN > 10 ? KEY_LEN : 10))
# Optional parts of the plot are strings, as gnuplot evaluates the body of an
# empty "for" once.
PAPER_PLOT = words(PAPER) == 0 ? '' : ', for [k=1:words(PAPER)] DATA using (X(int(word(PAPER, k)))):' . \
    '(column(C(int(word(PAPER, k)), 2))) with points pt 13 ps 1.3 lc rgb "black" title (k == 1 ? "paper" : "")'
PLANNER_KEYS = NP < 2 ? '' : ', for [j=1:NP] NaN with boxes fs solid 1.0 border lc rgb "gray20" ' . \
    'lc rgb word(COLORS, j) title word(PLANNERS, j)'
eval 'plot for [s=1:NS] DATA using (X(s)):(column(C(s, 0))):(column(C(s, 1))):(RGB(column(0))) ' . \
    'with boxerrorbars fs solid real(word(SHADE, s)) border lc rgb "gray20" lc rgb variable notitle, ' . \
    'for [s=1:NS] NaN with boxes fs solid real(word(SHADE, s)) border lc rgb "gray20" lc rgb KEY_COLOR ' . \
    'title word(SERIES, s)' . PAPER_PLOT . PLANNER_KEYS
