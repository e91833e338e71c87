$TAOTSIM vector --plan=echo tests/spec/vectors/echo/01-tiny-4rank-k1.json
