cd $TMP && touch AFILE && $TAOTSIM sweep --lambda-plan 3 --lambda-eval 3 --plots AFILE/sub -o sw.md; s=$?; test -e sw.md && echo LEFT; test -e AFILE/sub && echo MADE; exit $s
