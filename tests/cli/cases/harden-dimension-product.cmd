mkdir "$TMP/w" && cd "$TMP/w" || exit 9
python3 -c 'print("{\"format\":\"moe-routing-trace\",\"version\":1,\"experts\":65536,\"ep\":4096}"); print("{\"microbatch\":0,\"layer\":0,\"expert_counts\":[" + ",".join(["1"] * 65536) + "]}")' >big.jsonl
$TAOTSIM replay big.jsonl --planners none -o out.md 2>&1; echo "-> exit $?"; ls
python3 -c 'print("{\"format\":\"moe-routing-trace\",\"version\":1,\"experts\":4096,\"ep\":4096}"); print("{\"microbatch\":0,\"layer\":0,\"expert_counts\":[" + ",".join(["1"] * 4096) + "]}")' >wide.jsonl
$TAOTSIM replay wide.jsonl --planners none --slots 1024 -o out.md 2>&1; echo "-> exit $?"; ls
