$TAOTSIM gen -o $TMP/t.jsonl.gz --ep 16 --tokens 64 --microbatches 100 --layers 4 --hot-fraction 0.05 2>/dev/null && $TAOTSIM gen -o $TMP/t.jsonl --ep 16 --tokens 64 --microbatches 100 --layers 4 --hot-fraction 0.05 2>/dev/null && zcat $TMP/t.jsonl.gz | cmp - $TMP/t.jsonl && python3 -c 'import gzip,sys,zlib; d=open(sys.argv[1],"rb").read(); print("python gzip reads the same:", gzip.decompress(d)==open(sys.argv[2],"rb").read()); n=0
while d:
    o=zlib.decompressobj(31); o.decompress(d); d=o.unused_data; n+=1
print("members:", n)' $TMP/t.jsonl.gz $TMP/t.jsonl && $TAOTSIM gen -o $TMP/l1.jsonl.gz --gzip-level 1 --ep 16 --tokens 64 --microbatches 100 --layers 4 --hot-fraction 0.05 2>/dev/null && zcat $TMP/l1.jsonl.gz | cmp - $TMP/t.jsonl && echo "level 1 reads the same"
