$TAOTSIM bench --taot-no-comm-cost=off
