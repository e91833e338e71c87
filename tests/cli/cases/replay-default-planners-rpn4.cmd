$TAOTSIM replay traces/tiny-4rank.json --format csv
