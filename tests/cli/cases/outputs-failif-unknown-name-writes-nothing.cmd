mkdir $TMP/o; $TAOTSIM replay traces/tiny-4rank.json --planners none -o $TMP/o/out.md --dump-plans $TMP/o/plans.jsonl --fail-if "none.nonsense.mean > 1"; echo "status $?"; ls $TMP/o
