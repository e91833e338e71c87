$TAOTSIM advise traces/ep16-imb50.jsonl.gz --planners eplb,ultraep --slot-list 1 --intervals 8 --format json | grep -v "\"version\""
