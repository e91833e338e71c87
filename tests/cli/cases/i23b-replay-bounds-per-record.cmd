$TAOTSIM replay traces/tiny-4rank.json --planners taot,eplb,frontier --bounds --per-record --format csv -j 3
