$TAOTSIM ablation --seeds 1,2 --ep 16 --imbalance 0.5 --microbatches 2 --layers 1 --tokens 1024
