$TAOTSIM advise traces/ep16-imb50.jsonl.gz --slot-list 1 --intervals 8 --lambda-plan 3 --format csv | cut -d, -f1-4 | uniq
