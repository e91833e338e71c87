$TAOTSIM scaling --eps 8,16 --imbalances 0.5 --slot-list 1,2 --microbatches 1 --layers 2 --tokens 512 --step-model --no-timing
