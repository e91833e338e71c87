$TAOTSIM table1 --planners taot,lplb,eplb --lplb-rehome eplb -j 2
