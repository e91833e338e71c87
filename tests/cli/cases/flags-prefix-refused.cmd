$TAOTSIM replay traces/tiny-4rank.json --plan taot
