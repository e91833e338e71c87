$TAOTSIM replay traces/tiny-4rank.json --planners optimal,oc=optimal:--optimal-solver=cbc --optimal-node-limit 20 --format json | sed -n "/\"search\"/,/}/p"
