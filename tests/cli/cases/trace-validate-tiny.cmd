$TAOTSIM validate traces/tiny-4rank.json
