$TAOTSIM replay traces/tiny-4rank.json --planners taot,eplb,lplb-r=lplb:--lplb-rehome=eplb --format json | grep -v "\"version\""
