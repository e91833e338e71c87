$TAOTSIM vector tests/spec/vectors/echo/01-tiny-4rank-k1.json tests/spec/vectors/llep/01-tiny-4rank-worked-example.json
