"""Per-primitive times from a oneDNN verbose log (ONEDNN_VERBOSE=1; the exec lines of oneDNN 2.6 and 3.x).

    primitives.py LOG STEPS SKIP PEAK [TOP]       # each primitive and shape: ms a step, GFLOP/s, time lost to PEAK
    primitives.py --diff LOG_A LOG_B STEPS SKIP [TOP]   # the same primitives and shapes, A against B

STEPS: the timed steps the log's tail holds; SKIP: the fraction of exec lines left out first (the warm-up steps,
whose first calls include kernel generation); PEAK: GFLOP/s.
"""
import collections, re, sys


def flops(prim, prob):
    d = dict((k, int(v)) for k, v in re.findall(r"([a-z]+)(\d+)", prob.replace("_", "")))
    if prim == "convolution":
        return 2 * d["mb"] * d["ic"] * d["oc"] // d.get("g", 1) * d["oh"] * d["ow"] * d["kh"] * d["kw"]
    if prim == "inner_product":
        return 2 * d["mb"] * d["ic"] * d.get("ih", 1) * d.get("iw", 1) * d["oc"]
    if prim == "matmul":
        a, b = prob.split(":")[:2]
        m, k = map(int, a.split("x")[-2:])
        return 2 * m * k * int(b.split("x")[-1])
    return 0


def load(path, steps, skip):
    lines = [l for l in open(path) if ",exec," in l]
    tot, calls, fl, impl = (collections.defaultdict(float), collections.Counter(), collections.defaultdict(float), {})
    for l in lines[int(len(lines) * skip):]:
        f = l.strip().split(",")
        e = f.index("exec")
        # matmul's problem reads 42x512:512x2048 on 3.x and 42x512:512x2048:42x2048 on 2.6: keyed by src and weights
        prob = ":".join(f[-2].split(":")[:2]) if f[e + 2] == "matmul" else f[-2]
        key = (f[e + 2], f[e + 4], prob)
        tot[key] += float(f[-1]) / steps
        calls[key] += 1 / steps
        fl[key] += flops(key[0], prob) / steps
        impl[key] = f[e + 3]
    return tot, calls, fl, impl


if sys.argv[1] == "--diff":
    a, _, _, ia = load(sys.argv[2], float(sys.argv[4]), float(sys.argv[5]))
    b, _, _, ib = load(sys.argv[3], float(sys.argv[4]), float(sys.argv[5]))
    top = int(sys.argv[6]) if len(sys.argv) > 6 else 20
    print(f"all primitives: {sum(a.values()):.2f} -> {sum(b.values()):.2f} ms a step")
    print(f"{'A ms':>7}    {'B ms':>7}  {'B - A':>7}  primitive      pass              A's kernel             B's kernel")
    for k in sorted(set(a) | set(b), key=lambda k: -(b.get(k, 0) - a.get(k, 0)))[:top]:
        print(f"{a.get(k, 0):7.3f} -> {b.get(k, 0):7.3f}  {b.get(k, 0) - a.get(k, 0):+7.3f}  {k[0]:<14} {k[1]:<17} "
              f"{ia.get(k, '-'):<22} {ib.get(k, '-'):<27} {k[2]}")
else:
    tot, calls, fl, impl = load(sys.argv[1], float(sys.argv[2]), float(sys.argv[3]))
    peak = float(sys.argv[4])
    top = int(sys.argv[5]) if len(sys.argv) > 5 else 30
    t_all, f_all = sum(tot.values()), sum(fl.values())
    print(f"all primitives: {t_all:.2f} ms a step, {f_all / 1e9:.3f} GFLOP -> {f_all / t_all / 1e6:.0f} GFLOP/s; "
          f"at {peak:g} GFLOP/s the products would take {f_all / peak / 1e6:.2f} ms")
    rows = sorted(tot, key=lambda k: -(tot[k] - fl[k] / peak / 1e6))
    for k in rows[:top]:
        t = tot[k]
        print(f"  lost {t - fl[k] / peak / 1e6:6.3f} ms  {t:6.3f} ms {fl[k] / t / 1e6 if t else 0:5.0f} GFLOP/s "
              f"{calls[k]:4.1f} calls  {k[0]:<14} {impl[k]:<27} {k[1]:<17} {k[2]}")
