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
