$TAOTSIM replay traces/tiny-4rank.json --planners taot,frontier --bounds --fail-if "taot.excess_cost.max > 3" --fail-if "frontier.excess_imbalance.mean > 0.01"
