mkdir $TMP/o; $TAOTSIM replay traces/tiny-4rank.json --planners none --format csv -o $TMP/o/$(printf "%0250d" 0).csv; echo "status $?"; ls $TMP/o | wc -c
