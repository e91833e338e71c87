$TAOTSIM replay traces/tiny-4rank.json --planners taot --fail-if 'taot.balancedness_after.mean < taot.balancedness_before.mean' --format csv
