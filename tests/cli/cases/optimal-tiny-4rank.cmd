$TAOTSIM replay traces/tiny-4rank.json --planners optimal,optimal-mu01=optimal:--optimal-mu=0.1,taot,echo,llep
