$TAOTSIM replay traces/tiny-4rank.json --planners taot,eplb --fail-if 'eplb.balancedness_vllm.after < 0.6' -o $TMP/out.md
