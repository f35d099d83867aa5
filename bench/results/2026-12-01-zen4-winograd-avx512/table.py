# table.py STACK [ROUNDS...]: the medians of run.sh's rows for one stack.
import sys, statistics as st
s = sys.argv[1]
R = [int(x) for x in sys.argv[2:]] or [1, 2, 3, 4, 5]
def read(f):
    out = {}
    for line in open(f):
        p = line.split()
        if p and p[0] in ("resnet18", "resnet50"):
            out[p[0]] = dict(sinew=float(p[6]), torch=float(p[7]), rss=p[9], peak=p[12], trip=p[-1])
    return out
for net in ("resnet18", "resnet50"):
    a = [read(f"{s}-after-r{r}.txt")[net] for r in R]
    b = [read(f"{s}-before-r{r}.txt")[net] for r in R]
    t = [x["torch"] for x in a]
    ra = [x["sinew"] / y for x, y in zip(a, t)]
    rb = [x["sinew"] / y for x, y in zip(b, t)]
    g = [x["sinew"] / y["sinew"] for x, y in zip(a, b)]
    print(f"{net} PyTorch {t} median {st.median(t)}")
    print(f"{net} after  {[x['sinew'] for x in a]} / PyTorch {[round(x, 2) for x in ra]} median {st.median(ra):.2f}x"
          f" peak {[x['peak'] for x in a]} rss {[x['rss'] for x in a]} trip {[x['trip'] for x in a]}")
    print(f"{net} before {[x['sinew'] for x in b]} / PyTorch {[round(x, 2) for x in rb]} median {st.median(rb):.2f}x"
          f" peak {[x['peak'] for x in b]} rss {[x['rss'] for x in b]} trip {[x['trip'] for x in b]}")
    print(f"{net} after / before, same round {[round(x, 3) for x in g]} median {st.median(g):.3f}")
