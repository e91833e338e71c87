mkdir $TMP/out; $TAOTSIM replay traces/tiny-4rank.json --dump-plans '' -o $TMP/out/o.md; s=$?; ls $TMP/out; exit $s
