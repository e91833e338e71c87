mkdir $TMP/o && $TAOTSIM replay traces/ep16-imb10.jsonl.gz --planners eplb --eplb-groups 3 -o $TMP/o/out.md; s=$?; ls $TMP/o; exit $s
