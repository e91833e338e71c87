$TAOTSIM replay traces/ep16-imb50.jsonl.gz --planners taot --traffic node --plots $TMP/figs --plot-format none -o $TMP/r.md && ls $TMP/figs && cat $TMP/figs/traffic_taot.dat
