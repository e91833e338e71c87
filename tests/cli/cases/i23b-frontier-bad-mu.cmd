$TAOTSIM replay traces/tiny-4rank.json --planners frontier --frontier-mu -1
