$TAOTSIM advise traces/ep16-imb50.jsonl.gz --planners none,eplb,taot,echo,llep --slot-list 1,2 --intervals 1,8 --lambda-plan 1,3 -j 2
