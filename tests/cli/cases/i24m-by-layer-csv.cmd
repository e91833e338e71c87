$TAOTSIM replay traces/tiny-4rank.json --planners none,eplb --by-layer --format csv
