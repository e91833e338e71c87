# taotsim plot: advise_memory, from a 'advise' result, made from the template plots/advise.gp.
# Result of: taotsim advise traces/ep32-drift-long.jsonl.gz --planners eplb,trtllm,swift --slot-list 1,2,4 --intervals 8,32,128 --target-balancedness 0.9 --plots /tmp/adv_docfig -o /tmp/adv_docfig.md
# Render in this directory: gnuplot advise_memory.gp (PNG), gnuplot -e 'fmt="svg"' advise_memory.gp (SVG).

FIGURE = "advise_memory"
DATA = "advise.dat"
TITLE = "taotsim advise: traces/ep32-drift-long.jsonl.gz, slot budgets K = 1, 2, 4"
XCOL = 1
XLABEL = "memory per rank (MB): guest slots × one expert's weights"
PLANNERS = "eplb trtllm swift"
NP = 3
COLORS = "#56b4e9 #44aa99 #ddcc77"
POINTS = "15 13 11"
TARGET = 0.90000000000000002

# Output settings shared by every figure; `taotsim plot` copies this file into
# each generated script, after the generated variables and before the figure's
# template. fmt picks the format ("png", the default, or "svg"), out the file
# (default FIGURE.png or FIGURE.svg):  gnuplot -e 'fmt="svg"' FIGURE.gp
if (!exists("fmt")) fmt = "png"
if (!exists("out")) out = FIGURE . "." . fmt
set encoding utf8
if (fmt eq "svg") {
    set terminal svg size 960,600 dynamic noenhanced font "sans,12" background rgb "white"
} else {
    set terminal pngcairo size 960,600 noenhanced font "sans,12" background rgb "white"
}
set output out
set grid ytics lc rgb "gray85"
set border 3 back
set tics nomirror
# The key goes in rows between the title and the plot, so the plot keeps the
# whole width: eval KEY_ABOVE(number of entries, longest entry in characters).
# Columns are estimated from the longest entry (about 96 characters fit across)
# and capped there, so the rows, and the room kept for them, are known.
KEY_LEN = 0
if (exists("PLANNERS")) {
    do for [j=1:words(PLANNERS)] {
        KEY_LEN = strlen(word(PLANNERS, j)) > KEY_LEN ? strlen(word(PLANNERS, j)) : KEY_LEN
    }
}
KEY_COLS(n, len) = n < 1 ? 1 : (int(96 / (len + 8)) < 1 ? 1 : (int(96 / (len + 8)) > n ? n : int(96 / (len + 8))))
KEY_ROWS(n, len) = int((n + KEY_COLS(n, len) - 1) / KEY_COLS(n, len))
KEY_ABOVE(n, len) = sprintf("set key at graph 0.5, graph 1.015 center bottom horizontal reverse Left samplen 2 " . \
    "width 1 maxcols %d; set tmargin %g; set title offset 0, %g", KEY_COLS(n, len), 3.3 + 1.2 * KEY_ROWS(n, len), \
    0.1 + 1.2 * KEY_ROWS(n, len))

# taotsim advise: balancedness of every setting (mean over records) against
# what it costs, memory per rank (XCOL 1) or weight traffic per record
# (XCOL 2); one colour per planner, the Pareto set ringed, the recommended
# setting starred, the target balancedness dashed.
# Variables: DATA, TITLE, XCOL, XLABEL, PLANNERS, NP, COLORS, POINTS, TARGET.
# DATA: one block per planner (gnuplot index j - 1), columns: memory MB per
# rank, weight traffic per record, balancedness, pareto (0/1), recommended (0/1).
set title TITLE
set xlabel XLABEL
set ylabel "balancedness (mean load / max load, mean over records)"
eval KEY_ABOVE(NP + 2, KEY_LEN > 11 ? KEY_LEN : 11)
set offsets graph 0.03, graph 0.03, graph 0.03, graph 0.03
set arrow 1 from graph 0, first TARGET to graph 1, first TARGET nohead dt 2 lw 1.5 lc rgb "gray40"
set label 1 sprintf("target %g", TARGET) at graph 0.01, first TARGET offset 0, 0.6 textcolor rgb "gray20"
plot for [j=1:NP] DATA index (j - 1) using (column(XCOL)):3 with points pt int(word(POINTS, j)) ps 1.2 \
         lc rgb word(COLORS, j) title word(PLANNERS, j), \
     DATA using (column(XCOL)):($4 > 0 ? $3 : 1/0) with points pt 6 ps 2.4 lw 1.5 lc rgb "black" title "Pareto set", \
     DATA using (column(XCOL)):($5 > 0 ? $3 : 1/0) with points pt 3 ps 3.5 lw 2 lc rgb "#cc0000" title "recommended"
