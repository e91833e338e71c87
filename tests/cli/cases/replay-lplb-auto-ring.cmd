$TAOTSIM replay traces/tiny-4rank.json --planners lplb --slots 1 --format csv
