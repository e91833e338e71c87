mkdir $TMP/o; { $TAOTSIM replay traces/tiny-4rank.json --planners none -o $TMP/o/x --dump-plans $TMP/o/./x; echo "status $?"; ls $TMP/o; } 2>&1 | sed "s#$TMP#TMP#g"
