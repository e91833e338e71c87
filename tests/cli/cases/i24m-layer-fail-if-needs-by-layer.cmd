$TAOTSIM replay traces/tiny-4rank.json --planners taot --fail-if 'layer1.taot.rho_after.mean > 1'
