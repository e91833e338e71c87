$TAOTSIM report r.json --no-figures=yes
