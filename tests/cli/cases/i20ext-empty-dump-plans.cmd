$TAOTSIM replay traces/tiny-4rank.json --dump-plans '' -o $TMP/o.md; s=$?; ls $TMP; exit $s
