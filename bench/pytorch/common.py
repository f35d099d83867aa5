"""Shared helpers for the PyTorch anchor benchmarks (run with Debian's /usr/bin/python3).

Only the standard library is imported at module level; torch is imported through
import_torch(), which exits with code 3 when torch is unavailable so that the C++
benchmark driver can treat that as "no PyTorch anchor".
"""

import argparse
import json
import os
import re
import resource
import sys
import time

EXIT_NO_TORCH = 3


def import_torch():
    try:
        import torch  # noqa: F401
    except Exception as exc:  # ImportError, or a broken shared-library load
        sys.stderr.write(
            "sinew bench: cannot import torch (%s: %s); no PyTorch anchor. "
            "Install Debian's python3-torch and run with /usr/bin/python3.\n"
            % (type(exc).__name__, exc))
        sys.exit(EXIT_NO_TORCH)
    return torch


def parse_batches(values, default):
    """--batch may be repeated and/or a comma list: --batch 42 --batch 64,128."""
    if not values:
        return list(default)
    out = []
    for v in values:
        for part in str(v).split(","):
            part = part.strip()
            if part:
                n = int(part)
                if n <= 0:
                    raise SystemExit("--batch values must be positive: %r" % part)
                out.append(n)
    return out


def base_arg_parser(description, default_batches):
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--batch", action="append", default=None,
                   help="batch size; repeatable or comma list (default %s)"
                   % ",".join(str(b) for b in default_batches))
    p.add_argument("--threads", type=int, default=2,
                   help="torch.set_num_threads (intra-op); inter-op is fixed to 1 (default 2)")
    p.add_argument("--warmup", type=int, default=10, help="untimed steps before each repeat (default 10)")
    p.add_argument("--steps", type=int, default=200, help="timed steps per repeat (default 200)")
    p.add_argument("--repeats", type=int, default=3, help="timed repeats; the best is reported (default 3)")
    p.add_argument("--json", metavar="FILE", default=None, help="also write all results to FILE as a JSON list")
    add_precision(p)
    return p


def add_precision(p):
    """--precision f32|bf16: bf16 runs forward and loss under torch.autocast("cpu", dtype=torch.bfloat16),
    PyTorch's CPU mixed precision (f32 parameters, gradients and optimizer; bf16 convolutions and matmuls)."""
    p.add_argument("--precision", choices=("f32", "bf16"), default="f32",
                   help="bf16: forward and loss under torch.autocast('cpu', dtype=torch.bfloat16) (default f32)")


def autocast(torch, precision):
    """The context a forward and loss run in for --precision: nothing for f32, CPU autocast to bf16."""
    import contextlib
    if precision == "bf16":
        return torch.autocast("cpu", dtype=torch.bfloat16)
    return contextlib.nullcontext()


def setup_threads(torch, threads):
    # Inter-op must be set before any inter-op parallel work has started.
    try:
        torch.set_num_interop_threads(1)
    except RuntimeError:
        pass
    torch.set_num_threads(threads)


def _loaded_blas_library():
    """The BLAS shared object actually mapped into this process (Debian resolves
    libblas.so.3 through update-alternatives, so the build string alone says 'generic')."""
    try:
        with open("/proc/self/maps") as f:
            maps = f.read()
    except OSError:
        return None
    paths = sorted(set(re.findall(r"(/\S*lib(?:open)?blas[^/\s]*\.so[^\s]*)", maps)))
    if not paths:
        return None
    for p in paths:
        real = os.path.realpath(p)
        if "openblas" in real:
            flavour = os.path.basename(os.path.dirname(real))  # openblas-openmp / -pthread / -serial
            return flavour if flavour.startswith("openblas") else os.path.basename(real)
    real = os.path.realpath(paths[0])
    return os.path.relpath(real, "/usr/lib/x86_64-linux-gnu") if real.startswith("/usr/lib/x86_64-linux-gnu") else real


def blas_info(torch):
    cfg = torch.__config__.show()
    m = re.search(r"BLAS_INFO=([^,\s]+)", cfg)
    build = m.group(1) if m else "unknown"
    lib = _loaded_blas_library()
    return "%s (%s)" % (build, lib) if lib else build


def peak_rss_bytes():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def time_steps(step, warmup, steps, repeats):
    """Run warmup untimed steps then `steps` timed steps, `repeats` times.
    Returns the list of per-repeat elapsed seconds."""
    times = []
    for _ in range(repeats):
        for _ in range(warmup):
            step()
        t0 = time.perf_counter()
        for _ in range(steps):
            step()
        times.append(time.perf_counter() - t0)
    return times


def print_result(result):
    """One JSON object per configuration on stdout, flushed as soon as it is known."""
    print(json.dumps(result), flush=True)


def write_json(results, path):
    with open(path, "w") as f:
        json.dump(results, f, indent=2)
        f.write("\n")
