a='--ep 8 --experts 32 --topk 4 --tokens 64 --microbatches 1500 --layers 4'; $TAOTSIM gen -o $TMP/t.jsonl.gz $a 2>/dev/null && $TAOTSIM gen -o $TMP/t.jsonl $a 2>/dev/null && gzip -t $TMP/t.jsonl.gz && echo 'gzip -t: ok' && zcat $TMP/t.jsonl.gz | cmp - $TMP/t.jsonl && echo 'zcat: the same text' && python3 -c 'import gzip,sys; d=gzip.open(sys.argv[1]).read(); t=open(sys.argv[2],"rb").read(); print("python gzip:", "the same text" if d == t else "differs")' $TMP/t.jsonl.gz $TMP/t.jsonl && python3 -c '
import struct,sys
d=open(sys.argv[1],"rb").read(); off=0; n=0
while off < len(d):
    assert d[off:off+4]==b"\x1f\x8b\x08\x04" and d[off+10:off+16]==b"\x08\x00Tm\x04\x00", off
    off += struct.unpack("<I", d[off+16:off+20])[0]; n += 1
print("members found by their length field:", n, "ending at the file end:", off == len(d))' $TMP/t.jsonl.gz && for j in 1 2 4; do $TAOTSIM replay $TMP/t.jsonl.gz --planners none,taot -j $j > $TMP/r$j.md || exit 1; done && cmp $TMP/r1.md $TMP/r2.md && cmp $TMP/r1.md $TMP/r4.md && echo 'replay -j 1, 2, 4: the same bytes'
