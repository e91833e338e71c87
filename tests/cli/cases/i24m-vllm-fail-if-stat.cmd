$TAOTSIM replay traces/tiny-4rank.json --planners taot,eplb --fail-if 'eplb.balancedness_vllm.p95 < 0.6'
