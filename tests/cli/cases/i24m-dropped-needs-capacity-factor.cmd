$TAOTSIM replay traces/tiny-4rank.json --planners taot --fail-if 'taot.dropped_after.mean > 0'
