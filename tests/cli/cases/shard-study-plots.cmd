$TAOTSIM table1 --shard 0/2 --plots $TMP/plots -o $TMP/out.json; s=$?; test -e $TMP/out.json && echo written; exit $s
