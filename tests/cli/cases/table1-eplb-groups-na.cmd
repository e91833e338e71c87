$TAOTSIM table1 --planners taot,eplb --eplb-groups 3 -j 2 | tail -12
