$TAOTSIM replay traces/tiny-4rank.json --planners optimal,optimal-wide=optimal:--optimal-node-limit=100000 --optimal-node-limit 20 2>&1
