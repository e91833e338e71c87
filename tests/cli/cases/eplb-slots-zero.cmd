$TAOTSIM replay traces/tiny-4rank.json --planners eplb,oracle=eplb:--eplb-history=oracle,none=eplb:--eplb-history=none --slots 0
