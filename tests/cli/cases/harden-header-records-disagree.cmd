mkdir "$TMP/w" && cd "$TMP/w" || exit 9; h='{"format":"moe-routing-trace","version":1,"experts":4,"ep":2,"ranks_per_node":1'
printf '%s}\n%s\n%s\n' "$h" '{"microbatch":0,"layer":0,"counts":[[1,2,3,4],[5,6,7,8]]}' '{"microbatch":0,"layer":1,"counts":[[1,2,3,4],[5,6,7,8],[1,1,1,1]]}' >rows.jsonl
printf '%s}\n%s\n' "$h" '{"microbatch":0,"layer":0,"expert_counts":[1,2,3,4,5]}' >cols.jsonl
printf '%s}\n%s\n' "$h" '{"microbatch":0,"layer":0,"counts":[[1,2,3,4],[5,6,7]]}' >short-row.jsonl
printf '%s,"home":[0,1,0]}\n%s\n' "$h" '{"microbatch":0,"layer":0,"expert_counts":[1,2,3,4]}' >home.jsonl
printf '%s,\n"records":[\n%s]}\n' "$h" '{"microbatch":0,"layer":0,"counts":[[1,2,3,4]]}' >doc.json
printf 'dataset,iteration,layer_idx,0,1,2,3\na,0,0,1,2,3,4\na,0,1,1,2,3\n' >short.csv
for f in rows.jsonl cols.jsonl short-row.jsonl home.jsonl doc.json; do $TAOTSIM replay $f --planners none 2>&1; echo "-> exit $?"; done
$TAOTSIM replay short.csv --ep 2 --planners none 2>&1; echo "-> exit $?"
