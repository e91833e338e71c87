$TAOTSIM replay traces/ep16-imb30.jsonl.gz --planners taot --fail-if 'taot.rho_after.p95 > 0.0001' > /dev/null
