$TAOTSIM replay traces/tiny-4rank.json --planners "b=exec:./mine" --b-depth 3
