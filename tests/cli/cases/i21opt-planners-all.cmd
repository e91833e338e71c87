$TAOTSIM planners
