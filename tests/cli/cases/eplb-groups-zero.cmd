$TAOTSIM replay traces/tiny-4rank.json --planners eplb --eplb-groups 0
