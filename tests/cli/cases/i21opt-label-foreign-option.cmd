$TAOTSIM replay traces/tiny-4rank.json --planners t=taot:--llep-alpha=2
