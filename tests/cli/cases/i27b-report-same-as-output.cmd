cd $TMP && $TAOTSIM table1 --planners taot -o same.html --report same.html; s=$?; ls; exit $s
