mkdir "$TMP/w" && cd "$TMP/w" || exit 9
python3 -c 'print("{\"format\":\"moe-routing-trace\",\"version\":1,\"experts\":65536,\"ep\":4096}"); print("{\"microbatch\":0,\"layer\":0,\"expert_counts\":[" + ",".join(["1"] * 65536) + "]}")' >big.jsonl
python3 -c 'print("{\"format\":\"moe-routing-trace\",\"version\":1,\"experts\":65536,\"ep\":16}"); print("{\"microbatch\":0,\"layer\":0,\"expert_counts\":[" + ",".join(["1"] * 65536) + "]}")' >mid.jsonl
$TAOTSIM validate big.jsonl 2>&1; echo "-> exit $?"
$TAOTSIM replay mid.jsonl --ep 4096 --planners none -o out.md 2>&1; echo "-> exit $?"
$TAOTSIM validate mid.jsonl >/dev/null 2>&1; echo "-> exit $?"; ls
