E=${TSIM_EXAMPLE_PLANNERS:-build/examples/planners}; $TAOTSIM replay traces/tiny-4rank.json --planners "g=exec:$E/greedy" --format json | sed "s#$E#EXAMPLES#g" | grep -v '"version"'
