$TAOTSIM fit --hot-ranks 1 --hot-ranks per-node:1 --hot-experts all,2 --concentration 200 --tokens 256 --microbatches 1 --layers 2 --top 1 -j 1
