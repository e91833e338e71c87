$TAOTSIM table1 --planners lplb,eplb --lplb-rehome eplb --eplb-interval 4 -j 1 --format csv | grep -e ep16.imb70 -e ^study
