$TAOTSIM replay traces/ep16-imb50.jsonl.gz --planners f1=frontier:--lambda-plan=1,f30=frontier:--lambda-plan=30,fmu=frontier:--frontier-mu=0.05
