$TAOTSIM plot r.json --format
