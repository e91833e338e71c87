cd $TMP && $TAOTSIM table1 --planners taot --report no/such/dir/r.html; s=$?; ls; exit $s
