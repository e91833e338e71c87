$TAOTSIM validate --ep=8 traces/tiny-4rank.json 2>&1
