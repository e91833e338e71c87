cd $TMP && echo '{"tool": "taotsim", "study": "replay"}' > bad.json && $TAOTSIM report bad.json -o out.html --no-figures; s=$?; ls; exit $s
