printf '%s\n' 'read hello; echo "{\"ok\":true}"; exec sleep 30' > $TMP/hang.sh; $TAOTSIM bench --planners "taot,h=exec:sh $TMP/hang.sh" --shapes 4:8:1 --records 10 --exec-timeout 1
