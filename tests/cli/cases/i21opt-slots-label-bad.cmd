$TAOTSIM replay traces/tiny-4rank.json --planners e=echo:--slots=0
