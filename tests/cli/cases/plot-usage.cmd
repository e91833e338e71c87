"$TAOTSIM" plot 2>&1; "$TAOTSIM" plot tests/data/plot/table1.json --format pdf 2>&1; "$TAOTSIM" plot tests/data/plot/table1.json --bogus 2>&1; "$TAOTSIM" plot tests/data/plot/nonexistent.json 2>&1
