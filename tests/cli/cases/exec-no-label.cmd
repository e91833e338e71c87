$TAOTSIM replay traces/tiny-4rank.json --planners "none,exec:./mine"
