$TAOTSIM replay traces/tiny-4rank.json --planners none --fail-if "$(printf '%0300d' 0 | sed 's/0/abs(/g')none.rho_after.mean$(printf '%0300d' 0 | tr 0 ')') > 1" 2>&1
