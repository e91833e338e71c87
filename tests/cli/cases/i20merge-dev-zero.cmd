$TAOTSIM merge /dev/zero -o $TMP/out.md; s=$?; test -e $TMP/out.md && echo written; exit $s
