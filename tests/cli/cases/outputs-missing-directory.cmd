{ $TAOTSIM replay traces/tiny-4rank.json --planners none -o $TMP/no/such/dir/out.md; echo "status $?"; } 2>&1 | sed "s#$TMP#TMP#g"
