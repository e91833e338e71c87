t=$PWD/traces/ep16-imb10.jsonl.gz; mkdir "$TMP/w" && cd "$TMP/w" || exit 9
python3 -c 'import sys; d=bytearray(open(sys.argv[1],"rb").read()); d[-8]^=1; open("crc.jsonl.gz","wb").write(d); d=bytearray(open(sys.argv[1],"rb").read()); d[200:260]=bytes(60); open("zeroed.jsonl.gz","wb").write(d)' "$t"
: >empty.jsonl.gz; gzip -dc "$t" | head -2 >plain.jsonl.gz; cp "$t" packed.jsonl
for f in crc.jsonl.gz zeroed.jsonl.gz; do $TAOTSIM replay $f --planners none -o out.md 2>&1; echo "-> exit $?"; done
for f in empty.jsonl.gz plain.jsonl.gz packed.jsonl; do $TAOTSIM validate $f 2>&1; echo "-> exit $?"; done; ls
