E=${TSIM_EXAMPLE_PLANNERS:-build/examples/planners}; $TAOTSIM vector tests/spec/vectors/echo/01-*.json tests/spec/vectors/taot/04-*.json --planner "g=exec:$E/greedy" --g-divisor=4
