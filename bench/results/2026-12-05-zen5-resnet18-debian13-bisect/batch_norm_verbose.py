"""Batch norm's oneDNN verbose times per direction, kernel, layout and shape (median ms a call, calls): python3
batch_norm_verbose.py verbose-d12.txt verbose-d13.txt"""
import collections
import sys

for f in sys.argv[1:]:
    t=collections.defaultdict(list)
    for l in open(f):
        if 'exec' in l and 'batch_normalization' in l:
            p=l.strip().split(',')
            i=p.index('batch_normalization')
            impl,prop=p[i+1],p[i+2]; lay=p[i+3].split()[0]; shape=p[-2]; ms=float(p[-1])
            t[(prop,impl,lay.replace('data_','data:').replace('::',':'),shape)].append(ms)
    print('==',f, 'total ms (all calls)', round(sum(sum(v) for v in t.values()),1))
    for k,v in sorted(t.items(), key=lambda kv:-sorted(kv[1])[len(kv[1])//2]*len(kv[1]))[:14]:
        v=sorted(v); print(f'{k[0][:8]:8s} {k[1]:22s} {k[2][:30]:30s} {k[3]:22s} n={len(v):3d} median {v[len(v)//2]:.3f} ms')
