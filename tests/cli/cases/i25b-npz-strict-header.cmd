d=tests/import/pt; for f in npz-extra-key npz-version-1-1; do $TAOTSIM validate --rpn 8 $d/$f; echo "$f -> exit $?"; done; $TAOTSIM validate --rpn 8 $d/ultra; echo "ultra -> exit $?"
