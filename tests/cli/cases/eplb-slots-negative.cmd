$TAOTSIM replay traces/tiny-4rank.json --planners eplb --slots -1
