mkdir "$TMP/w" && cd "$TMP/w" || exit 9; h='{"format":"moe-routing-trace","version":1,"experts":4,"ep":2,"ranks_per_node":1'
r0='{"microbatch":0,"layer":0,"expert_counts":[1,2,3,4]}'; r1='{"microbatch":1,"layer":0,"expert_counts":[4,3,2,1]}'
printf '%s}\n%s\n%s\n%s\n' "$h" "$r0" "$r1" "$r0" >far.jsonl
printf 'dataset,iteration,layer_idx,0,1,2,3\na,0,0,1,2,3,4\nb,0,0,1,2,3,4\na,0,0,1,2,3,4\n' >far.csv
$TAOTSIM replay far.jsonl --planners none -o out.md 2>err; echo "-> exit $?"; grep -c "^taotsim replay: far.jsonl:4: record 3: duplicate record" err
$TAOTSIM replay far.csv --ep 2 --planners none -o out.md 2>err; echo "-> exit $?"; grep -c "^taotsim replay: far.csv:4: record 3: duplicate record" err
rm err; ls
