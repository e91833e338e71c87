cd $TMP && $TAOTSIM sweep --lambda-plan 3 --lambda-eval 3 --plots sw.md -o sw.md; s=$?; test -e sw.md && echo LEFT; exit $s
