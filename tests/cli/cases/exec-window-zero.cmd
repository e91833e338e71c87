$TAOTSIM replay traces/tiny-4rank.json --planners "b=exec:./mine" --exec-window 0
