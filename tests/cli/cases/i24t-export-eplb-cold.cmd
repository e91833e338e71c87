T=$PWD/traces/ep16-imb50.jsonl.gz; cd $TMP && mkdir o && $TAOTSIM replay $T --planners eplb --eplb-history none --export-layout o/l.json -o o/r.md; s=$?; ls o; exit $s
