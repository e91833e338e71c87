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
