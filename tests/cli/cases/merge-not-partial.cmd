cd $TMP && $TAOTSIM replay $OLDPWD/traces/ep16-imb30.jsonl.gz --planners echo --format json -o whole.json && $TAOTSIM merge whole.json -o out.md; s=$?; test -e out.md && echo written; exit $s
