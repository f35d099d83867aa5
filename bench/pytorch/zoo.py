#!/usr/bin/python3
"""PyTorch side of bench/zoo: one torchvision network, one batch size, training or inference images/s.

Networks (torchvision 0.14, num_classes=10):
  alexnet         on 3x64x64 (seed 002 feeds AlexNet 64x64 CIFAR images)
  resnet18        on 3x32x32, ImageNet stem (7x7 stride 2 + max-pool)
  resnet18_cifar  on 3x32x32, CIFAR stem (conv1 3x3 stride 1, no max-pool)
  resnet50        on 3x32x32, ImageNet stem
  vgg16_bn        on 3x32x32
  mobilenet_v2    on 3x32x32 (dropout 0.2, as sinew's)
  resnext50_32x4d on 3x32x32, ImageNet stem
Training step = zero_grad + forward + CrossEntropyLoss + backward + SGD(lr=0.01, momentum=0.9).step, in train()
mode (dropout and batch statistics on); --precision bf16 runs forward and loss under
torch.autocast("cpu", dtype=torch.bfloat16), PyTorch's CPU mixed precision. Inference = eval() forward under
torch.no_grad(). Both NCHW and channels_last are measured and, on PyTorch 2.x, torch.compile(model) (inductor, NCHW)
too, its first step (tracing and compilation, on an empty inductor cache) reported apart as compile_seconds;
images_per_second is the best of them.

Prints "result KEY VALUE" lines (read by bench/zoo), "info torch VERSION, ..." and "info compile STATUS";
--json FILE also writes them as one JSON object, with torch_version.
Usage: /usr/bin/python3 bench/pytorch/zoo.py --net resnet18 --batch 42 [--threads 2] [--warmup 10] [--steps 10]
       [--inference] [--precision f32|bf16] [--compile auto|on|off]
Exit code 3 if torch cannot be imported.
"""

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

NETS = {
    # name: (input height/width, expected parameter count with 10 classes)
    "alexnet": (64, 57044810),
    "resnet18": (32, 11181642),
    "resnet18_cifar": (32, 11173962),
    "resnet50": (32, 23528522),
    "vgg16_bn": (32, 134309962),
    "mobilenet_v2": (32, 2236682),
    "resnext50_32x4d": (32, 23000394),
}
SEED = 1234


def build(torch, name):
    import torchvision.models as models
    nn = torch.nn
    if name == "resnet18_cifar":
        m = models.resnet18(num_classes=10)
        m.conv1 = nn.Conv2d(3, 64, kernel_size=3, stride=1, padding=1, bias=False)
        m.maxpool = nn.Identity()
        return m
    return getattr(models, name)(num_classes=10)


def measure(torch, args, memory_format, compiled=False):
    """Images/s, the parameter count and the compiled model's first-step seconds (None when eager)."""
    torch.manual_seed(SEED)
    model = build(torch, args.net)
    size, expected = NETS[args.net]
    nparams = sum(p.numel() for p in model.parameters())
    assert nparams == expected, "%s has %d parameters, expected %d" % (args.net, nparams, expected)
    model = model.to(memory_format=memory_format)
    g = torch.Generator().manual_seed(SEED)
    x = torch.randn(args.batch, 3, size, size, generator=g).contiguous(memory_format=memory_format)
    y = torch.randint(0, 10, (args.batch,), generator=g)
    if args.inference:
        model.eval()

        def step():
            with torch.no_grad(), common.autocast(torch, args.precision):
                model(x)
    else:
        model.train()
        loss_fn = torch.nn.CrossEntropyLoss()
        opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

        def step():
            opt.zero_grad()
            with common.autocast(torch, args.precision):
                loss = loss_fn(model(x), y)
            loss.backward()
            opt.step()

    compile_seconds = None
    if compiled:
        model = common.compile_model(torch, model)
        compile_seconds = common.first_step_seconds(step)
    times = common.time_steps(step, args.warmup, args.steps, 1)
    return args.batch * args.steps / min(times), nparams, compile_seconds


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--net", required=True, choices=sorted(NETS))
    p.add_argument("--batch", type=int, required=True)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--inference", action="store_true")
    p.add_argument("--json", metavar="FILE")
    common.add_precision(p)
    common.add_compile(p)
    args = p.parse_args()
    if args.batch < 1 or args.threads < 1 or args.steps < 1 or args.warmup < 0:
        raise SystemExit("--batch/--threads/--steps must be >= 1 and --warmup >= 0")
    torch = common.import_torch()
    common.setup_threads(torch, args.threads)
    use_compile, status = common.compile_wanted(torch, args.compile)
    ips, compile_seconds = {}, None
    for name, fmt in (("nchw", torch.contiguous_format), ("channels_last", torch.channels_last)):
        ips[name], nparams, _ = measure(torch, args, fmt)
    if use_compile:
        try:
            ips["compile"], _, compile_seconds = measure(torch, args, torch.contiguous_format, compiled=True)
        except Exception as exc:  # a backend error (no C++ compiler, an unsupported op): eager figures only
            status = common.compile_failure(exc)
            sys.stderr.write("zoo: torch.compile candidate %s\n" % status)
    best = max(ips, key=ips.get)
    result = {
        "images_per_second": ips[best],
        "images_per_second_nchw": ips["nchw"],
        "images_per_second_channels_last": ips["channels_last"],
        "parameters": nparams,
        "threads": torch.get_num_threads(),
        "peak_rss_bytes": common.peak_rss_bytes(),
    }
    if "compile" in ips:
        result["images_per_second_compile"] = ips["compile"]
        result["compile_seconds"] = compile_seconds
    for k, v in result.items():
        print("result %s %.9g" % (k, v), flush=True)
    print("info torch %s, BLAS %s" % (torch.__version__, common.blas_and_pages(torch)), flush=True)
    print("info compile %s; best %s" % (status, best), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(dict(result, net=args.net, batch=args.batch, inference=args.inference,
                           precision=args.precision, best=best, compile=status, torch_version=torch.__version__),
                      f, indent=2)
            f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
