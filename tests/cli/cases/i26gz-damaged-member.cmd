a='--ep 8 --experts 32 --topk 4 --tokens 64 --microbatches 1500 --layers 4'; mkdir $TMP/w && cd $TMP/w || exit 9; $TAOTSIM gen -o t.jsonl.gz $a 2>/dev/null || exit 9
python3 -c '
import struct
d=bytearray(open("t.jsonl.gz","rb").read()); starts=[]; off=0
while off < len(d):
    starts.append(off); off += struct.unpack("<I", d[off+16:off+20])[0]
m=starts[1]; n=starts[2]-m
c=bytearray(d); c[m+n-8] ^= 1; open("crc.jsonl.gz","wb").write(c)
c=bytearray(d); c[m+n//2] ^= 0x10; open("data.jsonl.gz","wb").write(c)
c=bytearray(d); c[m+16] += 1; open("lying.jsonl.gz","wb").write(c)
open("cut.jsonl.gz","wb").write(d[:m+n//2])
open("tail.jsonl.gz","wb").write(d+b"not gzip\n")'
for f in crc data lying cut tail; do for j in 1 2; do $TAOTSIM replay $f.jsonl.gz --planners none -j $j -o out$j.md 2>err$j; echo "$f -j $j: exit $?"; done; cmp -s err1 err2 && echo "$f: the same message at -j 1 and -j 2"; cat err1; done; ls
