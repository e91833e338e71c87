$TAOTSIM replay traces/tiny-4rank.json --planners "t=lplb:--lplb-graph=torus:2x2,t-exact=lplb:--lplb-graph=torus:2x2:--lplb-solver=exact"
