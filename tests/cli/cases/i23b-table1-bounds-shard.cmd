$TAOTSIM table1 --bounds --shard 0/2 -o $TMP/p.json
