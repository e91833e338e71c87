cd $TMP && TAOTSIM_GNUPLOT=/nonexistent/gnuplot $TAOTSIM sweep --lambda-plan 3 --lambda-eval 3 --planners echo,taot -o sw.md --report sw.html; s=$?; ls; exit $s
