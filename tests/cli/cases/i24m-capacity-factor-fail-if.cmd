$TAOTSIM replay traces/tiny-4rank.json --planners taot --capacity-factor 1.1 --fail-if 'taot.dropped_after.max > 0 && taot.dropped_after.mean < none.dropped_before.mean' --planners none,taot
