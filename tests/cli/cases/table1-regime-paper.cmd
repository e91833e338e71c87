$TAOTSIM table1 --regime paper --planners taot,echo --format csv -j 2
