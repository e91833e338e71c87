f=/dev/shm/taotsim-golden-$$; $TAOTSIM replay traces/tiny-4rank.json --planners none --format csv -o $f; echo "status $?"; ls $f.tmp.* 2>/dev/null | wc -l; head -1 $f; rm -f $f
