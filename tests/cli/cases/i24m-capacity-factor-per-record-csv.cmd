$TAOTSIM replay traces/tiny-4rank.json --planners none,taot --capacity-factor 1.2 --per-record --format csv
