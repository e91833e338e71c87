$TAOTSIM table1 --planners taot,echo --lambda 7 | tail -4
