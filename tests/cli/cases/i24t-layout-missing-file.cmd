T=$PWD/traces/ep16-imb50.jsonl.gz; cd $TMP && mkdir o && $TAOTSIM replay $T --planners trtllm --trtllm-layout none.json
