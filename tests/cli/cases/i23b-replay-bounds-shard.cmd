$TAOTSIM replay traces/tiny-4rank.json --planners taot --bounds --shard 0/2 -o $TMP/p0.json
