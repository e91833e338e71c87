$TAOTSIM table1 --traces traces --planners echo=llep,llep,e2=echo -j 2 | sed -n 3,7p; $TAOTSIM table1 --traces traces --planners echo=llep,taot --format json | grep -A5 "\"paper\"" | head -6
