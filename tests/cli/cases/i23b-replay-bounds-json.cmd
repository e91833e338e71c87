$TAOTSIM replay traces/tiny-4rank.json --planners taot,llep,frontier --bounds --format json | grep -v "\"command\"\|\"version\""
