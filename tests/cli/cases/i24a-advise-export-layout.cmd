$TAOTSIM advise traces/ep16-imb50.jsonl.gz --planners taot,eplb,trtllm --slot-list 1,2 --intervals 4 --histories prev --target-balancedness 0.9 --export-layout $TMP/l.json -o $TMP/a.md 2>&1 | sed "s#$TMP#TMP#" && grep '^Target' $TMP/a.md && python3 -c "
import json, sys
d = json.load(open(sys.argv[1]))
m = d['physical_to_logical_map']
print('layers', len(m), 'positions', sorted(set(len(r) for r in m)))
print('every logical expert has a copy in every layer:', all(sorted(set(r)) == list(range(128)) for r in m))
" $TMP/l.json && $TAOTSIM advise traces/ep16-imb50.jsonl.gz --planners eplb --slot-list 2 --intervals 4 --histories prev --target-balancedness 0.9 --export-layout $TMP/t.json --export-format trtllm -o $TMP/b.md 2>&1 | sed "s#$TMP#TMP#" && python3 -c "
import json, sys
d = json.load(open(sys.argv[1]))
g = d['initial_global_assignments']
print('num_slots', d['num_slots'], 'layers', sorted(g), 'slots per layer', sorted(set(len(v) for v in g.values())))
" $TMP/t.json
