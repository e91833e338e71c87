$TAOTSIM replay traces/tiny-4rank.json --planners frontier,taot
