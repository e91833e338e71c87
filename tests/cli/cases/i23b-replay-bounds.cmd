$TAOTSIM replay traces/tiny-4rank.json --planners none,taot,echo,llep,frontier,eplb --bounds
