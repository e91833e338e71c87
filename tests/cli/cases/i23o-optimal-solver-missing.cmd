$TAOTSIM replay traces/tiny-4rank.json --planners optimal --optimal-solver
