$TAOTSIM table1 --planners taot,lplb --fail-if 'ep32.imb70.taot.weighted.mean > ep32.imb70.lplb.weighted.mean - 100' > /dev/null
