$TAOTSIM ablation --ep 8 --experts 32 --tokens 256 --microbatches 2 --layers 1 --seeds 1 --rpn 4 --bounds -j 2
