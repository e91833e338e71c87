$TAOTSIM replay traces/tiny-4rank.json --planners none -o "$TMP/out.json" --fail-if "$(printf '%0100000d' 0 | tr 0 -)1 > 0" 2>&1; s=$?; test ! -e "$TMP/out.json" || echo "output written"; exit $s
