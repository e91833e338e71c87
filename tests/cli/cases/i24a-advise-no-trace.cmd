$TAOTSIM advise --planners eplb
