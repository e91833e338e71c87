$TAOTSIM convert tests/data/trace/bad-row-length.jsonl $TMP/out.json 2>&1; s=$?; ls $TMP; exit $s
