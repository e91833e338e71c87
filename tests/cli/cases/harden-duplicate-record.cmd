mkdir "$TMP/w" && cd "$TMP/w" || exit 9; h='{"format":"moe-routing-trace","version":1,"experts":4,"ep":2,"ranks_per_node":1'
r0='{"microbatch":0,"layer":0,"expert_counts":[1,2,3,4]}'; r1='{"microbatch":0,"layer":1,"expert_counts":[4,3,2,1]}'
printf '%s}\n%s\n%s\n%s\n' "$h" "$r0" "$r1" "$r0" | gzip -n >dup.jsonl.gz
printf '%s,\n"records":[\n%s,\n%s,\n%s]}\n' "$h" "$r0" "$r1" "$r1" >dup.json
printf 'dataset,iteration,layer_idx,0,1,2,3\na,0,0,1,2,3,4\na,0,1,1,2,3,4\na,0,0,1,2,3,4\n' >dup.csv
for f in dup.jsonl.gz dup.json; do $TAOTSIM replay $f --planners none -o out.md --dump-plans plans.jsonl 2>&1; echo "-> exit $?"; done
$TAOTSIM replay dup.csv --ep 2 --planners none 2>&1; echo "-> exit $?"; ls
