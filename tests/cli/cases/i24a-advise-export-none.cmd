$TAOTSIM advise traces/ep16-imb50.jsonl.gz --planners taot,echo --slot-list 1 --export-layout $TMP/l.json -o $TMP/a.md; s=$?; [ -e $TMP/l.json ] || [ -e $TMP/a.md ] || echo "nothing written"; exit $s
