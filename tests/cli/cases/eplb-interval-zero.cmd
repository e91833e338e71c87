$TAOTSIM replay traces/tiny-4rank.json --planners eplb --eplb-interval 0
