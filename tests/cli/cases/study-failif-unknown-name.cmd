$TAOTSIM table1 --planners taot --fail-if 'taot.nonsense.mean > 1' > /dev/null
