$TAOTSIM validate tests/data/trace/unknown-keys.jsonl 2>&1
