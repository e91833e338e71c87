mkdir $TMP/o && $TAOTSIM replay traces/tiny-4rank.json --planners eplb --rpn 3 -o $TMP/o/out.md; s=$?; ls $TMP/o; exit $s
