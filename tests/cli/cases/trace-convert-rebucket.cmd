{ $TAOTSIM convert --rpn 4 --ep 2 traces/tiny-4rank.json $TMP/r.json && cd $TMP && $TAOTSIM validate r.json; } 2>&1 | sed "s#$TMP/##g"
