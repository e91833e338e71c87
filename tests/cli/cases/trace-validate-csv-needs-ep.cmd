$TAOTSIM validate tests/data/trace/routing.csv 2>&1
