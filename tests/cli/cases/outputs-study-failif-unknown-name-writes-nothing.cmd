mkdir $TMP/o; $TAOTSIM sweep traces/tiny-4rank.json --planners none --lambda-plan 3 --lambda-eval 3 -o $TMP/o/out.md --fail-if "none.nonsense.mean > 1"; echo "status $?"; ls $TMP/o
