$TAOTSIM table1 --fail-if "1$(printf '%05000d' 0 | sed 's/0/+1/g') > 0" 2>&1 >/dev/null
