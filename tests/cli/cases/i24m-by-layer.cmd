$TAOTSIM replay traces/tiny-4rank.json --planners none,taot,eplb --by-layer
