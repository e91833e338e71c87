cd $TMP && touch AFILE && $TAOTSIM table1 --plots AFILE -o t1.md; s=$?; test -e t1.md && echo LEFT; exit $s
