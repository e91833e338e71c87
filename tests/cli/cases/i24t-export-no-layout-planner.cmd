T=$PWD/traces/ep16-imb50.jsonl.gz; cd $TMP && mkdir o && $TAOTSIM replay $T --planners taot,echo --export-layout o/l.json; s=$?; ls o; exit $s
