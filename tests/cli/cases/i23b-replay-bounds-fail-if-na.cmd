$TAOTSIM replay traces/tiny-4rank.json --planners taot,llep --bounds --fail-if "llep.excess_cost.mean > 1"
