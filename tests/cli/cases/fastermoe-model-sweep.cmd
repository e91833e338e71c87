$TAOTSIM replay traces/ep32-imb70.jsonl.gz --planners fm0=fastermoe:--fastermoe-model-us=0,fm50=fastermoe:--fastermoe-model-us=50,fm200=fastermoe:--fastermoe-model-us=200,fastermoe,llep
