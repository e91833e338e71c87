$TAOTSIM replay traces/tiny-4rank.json --timing=no -o $TMP/out.md; echo "status $?"; test -e $TMP/out.md && echo written || echo "nothing written"
