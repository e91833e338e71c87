cp traces/regime-paper.json $TMP/r.json && cd $TMP && printf '\000garbage' >> r.json && $TAOTSIM table1 --regime r.json --planners taot -o out.md; s=$?; test -e out.md && echo written; exit $s
