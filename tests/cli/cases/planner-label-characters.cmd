$TAOTSIM replay traces/tiny-4rank.json --planners "a|b=none"; $TAOTSIM replay traces/tiny-4rank.json --planners "taot.v2=taot"; echo "status $?"
