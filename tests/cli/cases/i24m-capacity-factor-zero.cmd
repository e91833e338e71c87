$TAOTSIM replay traces/tiny-4rank.json --planners taot --capacity-factor 0
