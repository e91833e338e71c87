$TAOTSIM replay traces/tiny-4rank.json --no-overlap=banana
