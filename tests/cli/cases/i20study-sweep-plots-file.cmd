cd $TMP && touch AFILE && $TAOTSIM sweep --lambda-plan 3 --lambda-eval 3 --plots AFILE -o sw.md; s=$?; test -e sw.md && echo LEFT; exit $s
