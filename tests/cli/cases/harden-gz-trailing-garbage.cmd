t=$PWD/traces/ep16-imb10.jsonl.gz; mkdir "$TMP/w" && cd "$TMP/w" || exit 9; { cat "$t"; echo 'not gzip data'; } >tail.jsonl.gz
$TAOTSIM replay tail.jsonl.gz --planners none -o out.md 2>err; echo "-> exit $?"; grep -c "^taotsim replay: tail.jsonl.gz:" err
rm err; ls
