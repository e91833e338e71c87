E=${TSIM_EXAMPLE_PLANNERS:-build/examples/planners}; $TAOTSIM replay traces/tiny-4rank.json --planners "none,g=exec:$E/greedy" --g-divisor="$(printf '\377\376')"
