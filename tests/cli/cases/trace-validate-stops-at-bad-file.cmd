$TAOTSIM validate traces/tiny-4rank.json tests/data/trace/bad-row-length.jsonl traces/tiny-4rank.json 2>&1
