for o in out.pt out.npz; do $TAOTSIM convert tests/import/pt/stat.npy $TMP/$o --ep 2 2>&1 | sed "s|$TMP/||"; done; echo "outputs written: $(ls $TMP/out.* 2>/dev/null | wc -l)"
