$TAOTSIM replay traces/tiny-4rank.json --taot-no-flow-hint=1
