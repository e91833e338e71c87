$TAOTSIM replay traces/tiny-4rank.json --planners lplb --lplb-rehome lplb
