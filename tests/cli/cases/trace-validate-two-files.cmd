$TAOTSIM validate traces/tiny-4rank.json tests/data/trace/routing.csv --ep 4 --rpn 2 2>&1
