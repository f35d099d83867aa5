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
    ask_for_huge_pages()
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


def torch_version_tuple(torch):
    """(major, minor) of torch.__version__ ("1.13.0a0+git..." or "2.6.0+debian")."""
    m = re.match(r"(\d+)\.(\d+)", torch.__version__)
    return (int(m.group(1)), int(m.group(2))) if m else (0, 0)


def add_compile(p):
    """--compile auto|on|off: torch.compile (inductor) as one more candidate besides eager NCHW and channels_last."""
    p.add_argument("--compile", choices=("auto", "on", "off"), default="auto",
                   help="also time torch.compile(model) (inductor, NCHW) where torch has it (2.x): auto (default) "
                        "where available, on (exit 2 where not), off")


def compile_available(torch):
    """None when torch.compile can be tried, else why not (PyTorch 1.x has no torch.compile)."""
    if torch_version_tuple(torch) < (2, 0) or not hasattr(torch, "compile"):
        return "torch %s has no torch.compile" % torch.__version__
    return None


def compile_wanted(torch, mode):
    """Whether to run the torch.compile candidate for --compile `mode`, and a status for the results."""
    if mode == "off":
        return False, "off"
    why = compile_available(torch)
    if why is None:
        cold_compile_cache()
        return True, "ok"
    if mode == "on":
        sys.stderr.write("--compile on: %s\n" % why)
        sys.exit(2)
    return False, "unavailable: " + why


def cold_compile_cache():
    """Inductor keeps compiled graphs and kernels on disk (/tmp/torchinductor_USER) and reuses them across runs, which
    would make compile_seconds depend on what ran before. Unless TORCHINDUCTOR_CACHE_DIR is set, this process gets
    an empty cache of its own, removed at exit, so that compile_seconds is a cold compile."""
    if os.environ.get("TORCHINDUCTOR_CACHE_DIR"):
        return
    import atexit
    import shutil
    import tempfile
    path = tempfile.mkdtemp(prefix="sinew_inductor_")
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = path
    atexit.register(shutil.rmtree, path, ignore_errors=True)


def compile_model(torch, model):
    """torch.compile(model) with the default inductor backend, on a fresh dynamo cache (each candidate builds a new
    model, so that earlier candidates' graphs neither count toward recompile limits nor shorten compile time)."""
    import torch._dynamo
    torch._dynamo.reset()
    return torch.compile(model, backend="inductor")


def compile_failure(exc):
    """A one-line status for a torch.compile candidate that raised: inductor's BackendCompilerFailed says what failed
    on its second line ("backend='inductor' raised:" / "CalledProcessError: ...")."""
    lines = [l.strip() for l in str(exc).splitlines() if l.strip()]
    text = " ".join(lines[:2])
    return "failed: %s: %s" % (type(exc).__name__, text[:300])


def first_step_seconds(step):
    """The first call of a compiled step: dynamo traces and inductor compiles forward and backward here."""
    t0 = time.perf_counter()
    step()
    return time.perf_counter() - t0


def init_gloo(dist, port, rank, world_size):
    """dist.init_process_group("gloo") with a TCP rendezvous on loopback. PyTorch >= 2.4 asks for the libuv TCPStore
    by default, which Debian's python3-torch is built without ("use_libuv was requested but PyTorch was build without
    libuv support"); USE_LIBUV=0 selects the store 1.13 has always used (older versions ignore the variable). Every
    rank is on this host, so Gloo binds to the loopback interface (GLOO_SOCKET_IFNAME=lo; unset, 2.x warns when the
    hostname does not resolve and falls back to it anyway)."""
    os.environ.setdefault("USE_LIBUV", "0")
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    dist.init_process_group("gloo", init_method="tcp://127.0.0.1:%d" % port, rank=rank, world_size=world_size)


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


def blas_and_pages(torch):
    """What an anchor row names beside the torch version: the BLAS and the transparent huge page mode (with
    "THP_MEM_ALLOC_ENABLE=1" where this torch reads it and it is set)."""
    asked = (os.environ.get("THP_MEM_ALLOC_ENABLE") == "1" and torch_version_tuple(torch) >= (2, 2))
    return "%s, transparent huge pages %s%s" % (blas_info(torch), transparent_hugepages(),
                                                 " (THP_MEM_ALLOC_ENABLE=1)" if asked else "")


def ask_for_huge_pages():
    """Under "madvise", sets THP_MEM_ALLOC_ENABLE=1 (unless it is set) before torch is imported: PyTorch 2.2 and
    later then align buffers of 2 MB and more and ask for huge pages for them, which PyTorch 1.13 cannot. On the
    Zen 5 guest of bench/results/2026-12-05-zen5-issue34-debian13-thp-always, PyTorch 2.6 trained AlexNet at 63-67
    img/s under "madvise" without it and 128-140 with it; under "always" it gained nothing (162-178 without,
    139-163 with), so it is set only under "madvise"."""
    if "THP_MEM_ALLOC_ENABLE" not in os.environ and transparent_hugepages() == "madvise":
        os.environ["THP_MEM_ALLOC_ENABLE"] = "1"


def transparent_hugepages():
    """The kernel's transparent huge page mode ("always", "madvise" or "never"). PyTorch's CPU allocator takes
    large tensors from fresh mmap'ed memory every step, so under "madvise" each step faults in 4 KiB pages: on the
    Zen 5 guest of bench/results/2026-12-05-zen5-issue34-debian12-head, PyTorch 1.13 trained AlexNet at 63 img/s
    with 1.2 million minor faults against 175 img/s under "always"; sinew, whose buffers are set up once, moved
    by about 1% (AlexNet 455 and 457 img/s, ResNet-50 473 and 468). Every anchor row names the mode."""
    try:
        with open("/sys/kernel/mm/transparent_hugepage/enabled") as f:
            m = re.search(r"\[(\w+)\]", f.read())
            return m.group(1) if m else "unknown"
    except OSError:
        return "unknown"


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
