$TAOTSIM replay traces/ep16-imb30.jsonl.gz --planners ultraep,ultraep-legacy=ultraep:--ultraep-solver=legacy
