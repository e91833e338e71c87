# fit: residual heat map of one planner for the best regime of `taotsim fit`.
# Columns: the Table-1 cells (EP size, initial imbalance); rows: improvement
# (pp), intra and inter replicas per record. Colour: the normalised residual
# e = (ours - paper) / (|paper| + s), s = 1 pp for the improvement and 2
# replicas for intra and inter (blue: ours below the paper, red: above,
# clipped at ±1); each square shows ours above the paper's value (dark grey).
# Variables: DATA, TITLE, NCELLS, XTICS (the cell tick labels).
# DATA columns: 1 cell index, 2 metric index (0 improve pp, 1 intra, 2 inter),
# 3 residual e, 4 ours (NaN: the planner cannot run the cell), 5 paper,
# 6 and 7 their labels; one blank line after each metric's row.
set title TITLE
eval "set xtics " . XTICS
set ytics ("improve pp" 0, "intra" 1, "inter" 2)
set xrange [-0.5:NCELLS - 0.5]
set yrange [-0.5:2.5]
set cbrange [-1:1]
set cblabel "e = (ours − paper) / (|paper| + s)"
set palette defined (-1 "#2166ac", 0 "#f7f7f7", 1 "#b2182b")
set border 15
set tics out
unset grid
unset key
set bmargin 5
# The key to the two numbers in each square (the heat map has no legend).
set label "in each square: ours (top, black), the paper's value (below, grey)" at screen 0.5, screen 0.02 center font ",10"
plot DATA using 1:2:3 with image, \
     DATA using 1:($2 + 0.12):(stringcolumn(6)) with labels font ",10", \
     DATA using 1:($2 - 0.12):(stringcolumn(7)) with labels font ",9" textcolor rgb "#404040"
