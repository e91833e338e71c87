$TAOTSIM sweep traces/ep16-imb30.jsonl.gz --planners taot,eplb --lambda-plan 3 --lambda-eval 1,3 --capacity-factor 1.05 --fail-if 'eplb.dropped_after.mean > taot.dropped_after.mean'
