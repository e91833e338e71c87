# scaling with the default grids: LPLB cannot run at EP4 nor at K != 2; the figures leave those cells out.
cat > "$TMP/gnuplot" <<'EOF'
#!/bin/sh
case "$2" in "set terminal"*) exit 0 ;; esac
out=${2#*out=\"}; out=${out%\"}; echo image > "$out"
EOF
chmod +x "$TMP/gnuplot"
TAOTSIM_GNUPLOT="$TMP/gnuplot" "$TAOTSIM" scaling --tokens 512 --no-timing --plots "$TMP/p" -o "$TMP/s.md" 2>&1; echo "exit $?"; ls "$TMP/p"; grep -h '^# n/a' "$TMP/p/scaling_ep.dat"; grep -h '^PLANNERS' "$TMP/p/scaling_ep_weighted.gp" "$TMP/p/scaling_slots_weighted.gp"
