$TAOTSIM advise traces/tiny-4rank.json --planners optimal,none --slot-list 1,2 --format csv | cut -d, -f1-2,5-7
