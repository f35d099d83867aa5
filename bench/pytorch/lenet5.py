#!/usr/bin/python3
"""PyTorch training-throughput anchor for LeNet-5 on 3x32x32 (CIFAR-10 shaped) input.

Timed step = zero_grad + forward + CrossEntropyLoss + backward + SGD(lr=0.01, momentum=0.9).step.
Synthetic data is generated once with a fixed seed. Both NCHW (contiguous) and channels_last
memory formats are measured and, on PyTorch 2.x, torch.compile(model) (inductor, NCHW) too, its first
step (tracing and compilation) reported apart as compile_seconds; the best is reported as images_per_second.

--precision bf16 runs forward and loss under torch.autocast("cpu", dtype=torch.bfloat16).

Usage: /usr/bin/python3 bench/pytorch/lenet5.py [--batch 42,128] [--threads 2] [--precision f32|bf16]
       [--compile auto|on|off] [--json FILE]
Exit code 3 if torch cannot be imported.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

EXPECTED_PARAMS = 62006
DEFAULT_BATCHES = (42, 128)
NUM_CLASSES = 10
SEED = 1234


def build_model(nn):
    return nn.Sequential(
        nn.Conv2d(3, 6, 5), nn.Tanh(), nn.AvgPool2d(2),
        nn.Conv2d(6, 16, 5), nn.Tanh(), nn.AvgPool2d(2),
        nn.Flatten(),
        nn.Linear(400, 120), nn.Tanh(),
        nn.Linear(120, 84), nn.Tanh(),
        nn.Linear(84, NUM_CLASSES),
    )


def measure(torch, batch, memory_format, args, compiled=False):
    """Images/s of the best repeat, and the compiled model's first-step seconds (None when eager)."""
    nn = torch.nn
    torch.manual_seed(SEED)
    model = build_model(nn)
    nparams = sum(p.numel() for p in model.parameters())
    assert nparams == EXPECTED_PARAMS, "LeNet-5 has %d parameters, expected %d" % (nparams, EXPECTED_PARAMS)
    model = model.to(memory_format=memory_format)
    model.train()
    loss_fn = nn.CrossEntropyLoss()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

    g = torch.Generator().manual_seed(SEED)
    x = torch.randn(batch, 3, 32, 32, generator=g).contiguous(memory_format=memory_format)
    y = torch.randint(0, NUM_CLASSES, (batch,), generator=g)

    def step():
        opt.zero_grad()
        with common.autocast(torch, args.precision):
            out = model(x)
            loss = loss_fn(out, y)
        loss.backward()
        opt.step()

    compile_seconds = None
    if compiled:
        model = common.compile_model(torch, model)
        compile_seconds = common.first_step_seconds(step)
    times = common.time_steps(step, args.warmup, args.steps, args.repeats)
    return batch * args.steps / min(times), compile_seconds


def main():
    p = common.base_arg_parser(__doc__.splitlines()[0], DEFAULT_BATCHES)
    common.add_compile(p)
    args = p.parse_args()
    batches = common.parse_batches(args.batch, DEFAULT_BATCHES)
    if args.threads < 1 or args.steps < 1 or args.repeats < 1 or args.warmup < 0:
        raise SystemExit("--threads/--steps/--repeats must be >= 1 and --warmup >= 0")

    torch = common.import_torch()
    common.setup_threads(torch, args.threads)
    blas = common.blas_and_pages(torch)
    use_compile, compile_status = common.compile_wanted(torch, args.compile)

    results = []
    for batch in batches:
        ips, compile_seconds, status = {}, None, compile_status
        for name, fmt in (("nchw", torch.contiguous_format), ("channels_last", torch.channels_last)):
            ips[name] = measure(torch, batch, fmt, args)[0]
        if use_compile:
            try:
                ips["compile"], compile_seconds = measure(torch, batch, torch.contiguous_format, args, compiled=True)
            except Exception as exc:  # a backend error (no C++ compiler, an unsupported op): eager figures only
                status = common.compile_failure(exc)
                sys.stderr.write("lenet5: torch.compile candidate %s\n" % status)
        best = max(ips, key=ips.get)
        results.append({
            "net": "lenet5",
            "batch": batch,
            "precision": args.precision,
            "threads": torch.get_num_threads(),
            "images_per_second": round(ips[best], 1),
            "best": best,
            "images_per_second_nchw": round(ips["nchw"], 1),
            "images_per_second_channels_last": round(ips["channels_last"], 1),
            "images_per_second_compile": round(ips["compile"], 1) if "compile" in ips else None,
            "compile_seconds": round(compile_seconds, 3) if compile_seconds is not None else None,
            "compile": status,
            "torch_version": torch.__version__,
            "blas": blas,
            "peak_rss_bytes": common.peak_rss_bytes(),
        })
        common.print_result(results[-1])
    if args.json:
        common.write_json(results, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
