#!/usr/bin/python3
"""PyTorch side of bench/ops: the same fundamental and training operations, from the plan file bench/ops writes.

Each plan line is `group<TAB>shape<TAB>key=value,...` (see bench/ops.cpp). For each group this script times
what PyTorch runs for it (the operator a PyTorch training step calls) and writes CSV rows
`group,operation,shape,seconds,impl`, impl ending with "[torch VERSION]". Each figure is the median of at least 3
calls, and of as many as fit in --min-time seconds (at most --max-calls), after one untimed call: the same rule as
the C++ side.

Usage: /usr/bin/python3 bench/pytorch/ops.py --plan PLAN.tsv --out ROWS.csv [--threads 2] [--min-time 0.3]
Exit code 3 if torch cannot be imported.
"""

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402


def median_seconds(fn, min_time, max_calls):
    fn()
    times = []
    start = time.perf_counter()
    while (len(times) < 3 or time.perf_counter() - start < min_time) and len(times) < max_calls:
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    times.sort()
    return times[len(times) // 2]


def run_group(torch, group, p, timed):
    """Returns [(operation, seconds, impl)] for one plan line; [] for an unknown group."""
    F = torch.nn.functional
    aten = torch.ops.aten
    g = torch.Generator().manual_seed(1)

    def randn(*shape, scale=0.1):
        return torch.randn(*shape, generator=g) * scale

    if group == "zeros":
        return [("zeros", timed(lambda: torch.zeros(p["n"])), "torch.zeros")]
    if group in ("relu", "tanh", "sigmoid", "softplus", "softsign"):
        x = randn(p["n"])
        fn = {"relu": F.relu, "tanh": torch.tanh, "sigmoid": torch.sigmoid, "softplus": F.softplus,
              "softsign": F.softsign}[group]
        return [(group, timed(lambda: fn(x)), "torch %s (new output)" % group)]
    if group == "dot":
        x, w = randn(p["n"]), randn(p["n"])
        return [("dot", timed(lambda: torch.dot(x, w)), "torch.dot")]
    if group == "gemm":
        n = p["n"]
        a, b = randn(n, n), randn(n, n)
        return [("gemm", timed(lambda: F.linear(a, b)), "F.linear (a b^T)")]
    if group == "flatten":
        x = randn(p["n"], p["c"], p["h"], p["w"])
        return [("flatten", timed(lambda: torch.flatten(x, 1)), "torch.flatten (a view of contiguous NCHW)")]
    if group == "normalize":
        x = randn(p["rows"], p["cols"])
        return [("normalize", timed(lambda: F.layer_norm(x, (p["cols"],))), "F.layer_norm, no affine")]
    if group == "conv":
        n, c, h, w, o, k, s, pad = (p[key] for key in ("n", "c", "h", "w", "o", "k", "s", "p"))
        x, wt = randn(n, c, h, w), randn(o, c, k, k)
        bias = randn(o) if p["bias"] else None
        y = F.conv2d(x, wt, bias, s, pad)
        dy = randn(*y.shape)
        bias_sizes = [o] if p["bias"] else None

        def backward(mask):
            return lambda: aten.convolution_backward(dy, x, wt, bias_sizes, [s, s], [pad, pad], [1, 1], False,
                                                     [0, 0], 1, mask)

        return [
            ("conv_forward", timed(lambda: F.conv2d(x, wt, bias, s, pad)), "F.conv2d (NCHW)"),
            ("conv_backward_data", timed(backward([True, False, False])), "aten.convolution_backward, input"),
            ("conv_backward_weights", timed(backward([False, True, bool(p["bias"])])),
             "aten.convolution_backward, weight" + (" and bias" if p["bias"] else "")),
        ]
    if group == "fc":
        n, i, o = p["n"], p["in"], p["out"]
        x, wt, b = randn(n, i), randn(o, i), randn(o)
        dy = randn(n, o)
        return [
            ("fc_forward", timed(lambda: F.linear(x, wt, b)), "F.linear"),
            ("fc_backward_data", timed(lambda: dy.mm(wt)), "mm (autograd's linear backward, input)"),
            ("fc_backward_weights", timed(lambda: (dy.t().mm(x), dy.sum(0))),
             "mm + sum (autograd's linear backward, weight and bias)"),
        ]
    if group == "batch_norm":
        n, c, h, w = p["n"], p["c"], p["h"], p["w"]
        x, dy = randn(n, c, h, w), randn(n, c, h, w)
        weight, bias = torch.ones(c), torch.zeros(c)
        rm, rv = torch.zeros(c), torch.ones(c)
        _, mean, invstd = aten.native_batch_norm(x, weight, bias, rm, rv, True, 0.1, 1e-5)
        return [
            ("batch_norm_forward", timed(lambda: aten.native_batch_norm(x, weight, bias, rm, rv, True, 0.1, 1e-5)),
             "aten.native_batch_norm (training)"),
            ("batch_norm_backward",
             timed(lambda: aten.native_batch_norm_backward(dy, x, weight, rm, rv, mean, invstd, True, 1e-5,
                                                           [True, True, True])),
             "aten.native_batch_norm_backward"),
        ]
    if group == "pooling":
        n, c, h, w, k, s = p["n"], p["c"], p["h"], p["w"], p["k"], p["s"]
        x = randn(n, c, h, w)
        y, idx = F.max_pool2d(x, k, s, return_indices=True)
        dy = randn(*y.shape)
        return [
            ("pooling_forward", timed(lambda: F.max_pool2d(x, k, s, return_indices=True)),
             "F.max_pool2d with indices"),
            ("pooling_backward",
             timed(lambda: aten.max_pool2d_with_indices_backward(dy, x, [k, k], [s, s], [0, 0], [1, 1], False, idx)),
             "aten.max_pool2d_with_indices_backward"),
        ]
    if group == "sgd_update":
        param = torch.nn.Parameter(randn(p["n"]))
        param.grad = randn(p["n"], scale=0.001)
        opt = torch.optim.SGD([param], lr=0.01, momentum=0.9)
        return [("sgd_update", timed(opt.step), "torch.optim.SGD momentum 0.9, one flat tensor")]
    return []


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--plan", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--min-time", type=float, default=0.3)
    ap.add_argument("--max-calls", type=int, default=1000)
    args = ap.parse_args()

    torch = common.import_torch()
    common.setup_threads(torch, args.threads)
    torch.set_grad_enabled(False)

    def timed(fn):
        return median_seconds(fn, args.min_time, args.max_calls)

    rows = []
    with open(args.plan) as f:
        for line in f:
            line = line.rstrip("\n")
            if not line:
                continue
            group, shape, params = line.split("\t")
            p = {k: int(v) for k, v in (kv.split("=") for kv in params.split(",") if kv)}
            for operation, seconds, impl in run_group(torch, group, p, timed):
                rows.append((group, operation, shape, seconds, impl))
                print("%-22s %-7s %-48s %12.6f ms" % (operation, "pytorch", shape, 1e3 * seconds), flush=True)
    with open(args.out, "w") as f:
        f.write("group,operation,shape,seconds,impl\n")
        for group, operation, shape, seconds, impl in rows:
            # impl is the last column (it may hold commas); it ends with the torch version, so that bench/ops's
            # merged CSV says which PyTorch each row is from.
            f.write("%s,%s,%s,%.9g,%s [torch %s]\n" % (group, operation, shape, seconds, impl, torch.__version__))
    print("pytorch %s, BLAS %s, %d threads" % (torch.__version__, common.blas_and_pages(torch), torch.get_num_threads()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
