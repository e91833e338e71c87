$TAOTSIM validate --format csv --dataset "wiki, en" --ep 2 tests/data/trace/routing.csv
