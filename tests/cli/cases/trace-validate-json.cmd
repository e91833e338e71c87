$TAOTSIM validate --format json traces/tiny-4rank.json | sed "s/\"version\":.*\"0\.1\.0[^\"]*\"/\"version\": \"VERSION\"/"
