$TAOTSIM table1 --std --planners taot,echo -j 1 --format csv
