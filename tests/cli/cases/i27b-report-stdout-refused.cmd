cd $TMP && $TAOTSIM ablation --seeds 1 --report - -o a.md; s=$?; ls; exit $s
