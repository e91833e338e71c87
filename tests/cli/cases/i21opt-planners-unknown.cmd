$TAOTSIM planners nosuch
