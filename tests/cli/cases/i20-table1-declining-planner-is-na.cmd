P=${TSIM_TEST_PLANNERS:-build/tests/planners}; $TAOTSIM table1 --traces traces -j 2 --planners "echo,b=exec:$P/broken_planner decline $TMP/pid" | grep -c "b: n/a (planner .b.: declined"
