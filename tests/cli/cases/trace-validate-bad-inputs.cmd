for f in tests/data/trace/bad-*; do $TAOTSIM validate "$f" 2>&1; echo "-> exit $?"; done
