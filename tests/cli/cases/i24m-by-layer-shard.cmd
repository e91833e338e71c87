$TAOTSIM replay traces/tiny-4rank.json --planners taot --by-layer --shard 0/2 -o $TMP/p.json
