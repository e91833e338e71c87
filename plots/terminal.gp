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
set border 3
set tics nomirror
