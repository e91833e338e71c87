mkdir $TMP/out && $TAOTSIM gen -o $TMP/out/t.json --experts 128 --ep 48; s=$?; ls $TMP/out; exit $s
