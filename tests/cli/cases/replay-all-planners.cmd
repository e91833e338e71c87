$TAOTSIM replay traces/ep16-imb50.jsonl.gz --planners none,taot,taot-split=taot:--taot-phase3=split,echo,llep,lplb,lplb-exact=lplb:--lplb-solver=exact
