cd $TMP && touch AFILE && $TAOTSIM fit --hot-ranks 1 --hot-experts all --concentration 200 --tokens 256 --microbatches 1 --layers 2 --plots AFILE -o fit.md; s=$?; test -e fit.md && echo LEFT; exit $s
