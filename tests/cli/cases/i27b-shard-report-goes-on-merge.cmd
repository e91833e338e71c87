cd $TMP && $TAOTSIM ablation --seeds 1,2 --shard 0/2 -o p0.json --report r.html; s=$?; ls; exit $s
