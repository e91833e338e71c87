$TAOTSIM replay traces/ep16-imb70.jsonl.gz --planners swift,swift-tp2=swift:--swift-tp=2 --format csv
