$TAOTSIM replay traces/tiny-4rank.json --planners none,taot,eplb --capacity-factor 1.2
