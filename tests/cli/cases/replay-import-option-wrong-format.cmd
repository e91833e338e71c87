$TAOTSIM replay traces/tiny-4rank.json --tensor x --planners none
