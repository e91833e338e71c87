$TAOTSIM replay traces/tiny-4rank.json --planners none,taot --by-layer --capacity-factor 1.5 --format json | grep -v '"version"'
