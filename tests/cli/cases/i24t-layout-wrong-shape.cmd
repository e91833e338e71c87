T=$PWD/traces/ep16-imb50.jsonl.gz; cd $TMP && mkdir o && $TAOTSIM replay $T --planners trtllm --export-layout l.json -o a.md && $TAOTSIM replay $T --planners swift --slots 1 --swift-layout l.json
