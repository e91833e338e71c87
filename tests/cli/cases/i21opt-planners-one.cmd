$TAOTSIM planners eplb
