$TAOTSIM table1 --fail-if 'taot.weighted.mean >'
