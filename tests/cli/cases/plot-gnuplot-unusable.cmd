# A gnuplot that is missing, fails, or lacks pngcairo: exit 2, what to install, nothing written; --format none needs no gnuplot.
cat > "$TMP/fails" <<'EOF'
#!/bin/sh
exit 1
EOF
cat > "$TMP/nocairo" <<'EOF'
#!/bin/sh
echo "         line 0: unknown or ambiguous terminal type; type just 'set terminal' for a list" >&2
exit 1
EOF
chmod +x "$TMP/fails" "$TMP/nocairo"
for g in "$TMP/missing" "$TMP/fails" "$TMP/nocairo"; do
    TAOTSIM_GNUPLOT=$g "$TAOTSIM" plot tests/data/plot/table1.json -o "$TMP/out" >"$TMP/said" 2>&1; status=$?
    sed "s|$TMP|TMP|g" "$TMP/said"; echo "exit $status"
    test -e "$TMP/out" && echo "output written"
done
TAOTSIM_GNUPLOT="$TMP/fails" "$TAOTSIM" plot tests/data/plot/table1.json -o "$TMP/out" --format none | sed "s|$TMP|TMP|g"
