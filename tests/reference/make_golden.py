#!/usr/bin/python3
"""Writes tests/reference/golden/<net>.json: what torchvision computes for each zoo net in training mode
(BatchNorm on batch statistics, dropout p = 0) with every state_dict tensor set by the formula in
reference_nets.py, on BATCH images from the same formula and fixed labels:

  keys        every state_dict key with its dtype and shape (sinew's names must equal them)
  logits      [BATCH x 10], loss (CrossEntropyLoss, mean)
  grads       per parameter: the gradient's norm and its values at 8 fixed indices
  buffers     per running_mean / running_var after the forward pass: norm and 8 values
  num_batches_tracked after the forward pass
  eval_logits [BATCH x 10] in evaluation mode after that pass (running statistics), for the nets of EVAL_NETS

The values are float64 results (see run()); torch_float32_error is how far PyTorch's own float32 run is from
them. No weights are stored: sinew's test recomputes them from the formula by name. Run from anywhere, with
PyTorch 1.13 (Debian 12) or 2.x (Debian 13); --out DIR writes elsewhere than golden/ (to compare, say):
  /usr/bin/python3 tests/reference/make_golden.py [--out DIR] [net ...]
"""

import argparse
import json
import os

import numpy as np

import reference_nets as rn

SAMPLES = 8
# The nets whose golden files also hold the evaluation-mode logits (the older files were written without them).
EVAL_NETS = ("mobilenet_v2", "resnext50_32x4d")


def sample_indices(n):
    """0, n - 1 and six spread between: the C++ test reads them from the golden file."""
    idx = [0, n - 1] + [int(rn.mix64(np.uint64(j + 1)) % np.uint64(n)) for j in range(SAMPLES - 2)]
    return idx


def summary(t):
    flat = t.detach().reshape(-1).double()
    idx = sample_indices(flat.numel())
    return {"norm": float(flat.norm()), "index": idx, "value": [float(flat[i]) for i in idx]}


def dump(golden):
    """JSON with one line per key, per gradient and per buffer: small, and a diff shows what changed."""
    compact = lambda v: json.dumps(v, separators=(",", ":"))
    lines = []
    for k, v in golden.items():
        if k == "keys":
            lines.append('"keys":[\n' + ",\n".join(compact(e) for e in v) + "\n]")
        elif isinstance(v, dict) and k != "torch_float32_error":
            lines.append(compact(k) + ":{\n" + ",\n".join(compact(n) + ":" + compact(e) for n, e in v.items()) + "\n}")
        else:
            lines.append(compact(k) + ":" + compact(v))
    return "{\n" + ",\n".join(lines) + "\n}\n"


def forward_backward(net, dtype):
    """The model with the formula's weights in `dtype`, after one training-mode forward and backward pass."""
    import torch

    model = rn.build(net)
    sd = model.state_dict()
    with torch.no_grad():
        for name, t in sd.items():
            t.copy_(torch.from_numpy(rn.formula(name, tuple(t.shape))))
    model = model.to(dtype)
    x = torch.from_numpy(rn.formula("input", (rn.BATCH,) + rn.input_shape(net))).to(dtype)
    out = model(x)
    loss = torch.nn.functional.cross_entropy(out, torch.tensor(rn.labels()))
    loss.backward()
    return model, sd, out, loss


def evaluate(model, net, dtype):
    """The logits in evaluation mode (running statistics, as the training pass left them) on the same batch."""
    import torch

    x = torch.from_numpy(rn.formula("input", (rn.BATCH,) + rn.input_shape(net))).to(dtype)
    model.eval()
    with torch.no_grad():
        return model(x)


class Worst:
    """The metric of tests/support/torchvision_golden.hpp: max |a - b| / max(|b|, floor) over the compared entries."""

    def __init__(self):
        self.error = 0.0

    def add(self, got, want, floor):
        self.error = max(self.error, abs(got - want) / max(abs(want), floor, 1e-30))


def compare(table, tensors, worst):
    for key, s in table.items():
        if s.get("zero"):
            continue
        flat = tensors[key].detach().reshape(-1).double()
        worst.add(float(flat.norm()), s["norm"], 0)
        floor = s["norm"] / flat.numel() ** 0.5
        for i, v in zip(s["index"], s["value"]):
            worst.add(float(flat[i]), v, floor)


def run(net, out_dir):
    """The golden values are computed in float64 from the same float32 weights and input: the exact answer, up
    to float64 rounding. PyTorch's own float32 run is compared with them by the C++ test's metric and its error
    kept as torch_float32_error: where BatchNorm normalises a handful of nearly equal values (the ImageNet stem
    leaves 1 x 1 maps in layer4 at 32 x 32), float32 cannot be more accurate than that, in PyTorch or in sinew."""
    import torch

    torch.set_num_threads(2)
    model, sd, out, loss = forward_backward(net, torch.float64)
    grads = {k: summary(p.grad) for k, p in model.named_parameters()}
    # A bias followed by BatchNorm in training mode has a gradient of exactly 0 (the mean is subtracted): both
    # float32 results are rounding noise, compared only in size.
    largest = max(g["norm"] for g in grads.values())
    for g in grads.values():
        if g["norm"] <= 1e-9 * largest:
            g["zero"] = True
    golden = {
        "net": net,
        "torch": torch.__version__,
        "batch": rn.BATCH,
        "labels": rn.labels(),
        "keys": [[k, "I64" if v.dtype == torch.int64 else "F32", list(v.shape)] for k, v in sd.items()],
        "logits": [float(v) for v in out.detach().reshape(-1)],
        "loss": float(loss),
        "grads": grads,
        "buffers": {k: summary(b) for k, b in model.named_buffers() if b.dtype != torch.int64},
        "num_batches_tracked": sorted({int(b) for k, b in model.named_buffers() if b.dtype == torch.int64}),
    }
    if net in EVAL_NETS:
        golden["eval_logits"] = [float(v) for v in evaluate(model, net, torch.float64).reshape(-1)]

    model32, _, out32, loss32 = forward_backward(net, torch.float32)
    logits, g32, b32 = Worst(), Worst(), Worst()
    want = golden["logits"]
    rms = (sum(v * v for v in want) / len(want)) ** 0.5
    for got, w in zip(out32.detach().reshape(-1).tolist(), want):
        logits.add(got, w, rms)
    logits.add(float(loss32), golden["loss"], 0)
    compare(grads, {k: p.grad for k, p in model32.named_parameters()}, g32)
    compare(golden["buffers"], dict(model32.named_buffers()), b32)
    golden["torch_float32_error"] = {"logits": logits.error, "grads": g32.error, "buffers": b32.error}
    if net in EVAL_NETS:
        want = golden["eval_logits"]
        rms, worst = (sum(v * v for v in want) / len(want)) ** 0.5, Worst()
        for got, w in zip(evaluate(model32, net, torch.float32).reshape(-1).tolist(), want):
            worst.add(got, w, rms)
        golden["torch_float32_error"]["eval_logits"] = worst.error

    path = os.path.join(out_dir, net + ".json")
    with open(path, "w") as f:
        f.write(dump(golden))
    print("%s: loss %.6f, %d keys, PyTorch float32's error: logits %.1e, gradients %.1e, running statistics %.1e"
          " -> %s (%d bytes)" % (net, float(loss), len(sd), logits.error, g32.error, b32.error, path,
                                 os.path.getsize(path)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", metavar="DIR", default=os.path.join(rn.HERE, "golden"),
                    help="where <net>.json goes (default tests/reference/golden)")
    ap.add_argument("nets", nargs="*", metavar="net", help="default: all of %s" % ", ".join(rn.NETS))
    args = ap.parse_args()
    unknown = [n for n in args.nets if n not in rn.NETS]
    if unknown:
        ap.error("unknown net %s; one of %s" % (", ".join(unknown), ", ".join(rn.NETS)))
    os.makedirs(args.out, exist_ok=True)
    for net in args.nets or rn.NETS:
        run(net, args.out)


if __name__ == "__main__":
    main()
