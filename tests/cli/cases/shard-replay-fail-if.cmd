$TAOTSIM replay traces/ep16-imb30.jsonl.gz --shard 0/2 --fail-if 'taot.rho_after.mean > 1' -o $TMP/out.json; s=$?; test -e $TMP/out.json && echo written; exit $s
