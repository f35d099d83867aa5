#!/usr/bin/python3
"""The paper's experiment as one command: Krisilias et al. 2021 (../shared/papers/cpu-cluster-frameworks-2021.txt),
Table III nets x systems x modes with Table IV's settings, the one-policy swaps that isolate each finding's cause,
the figures as the paper draws them, and REPRODUCTION.md saying which findings hold.

  /usr/bin/python3 bench/paper/run_matrix.py --quick                       # < 5 minutes, generated data, LeNet-5
  /usr/bin/python3 bench/paper/run_matrix.py --data ../shared/data/cifar-10-batches-bin \\
          [--data100 DIR] [--epochs 10] [--out paper-out]                   # the whole matrix (hours)

It builds the bench/paper targets it needs (--build-dir, default build/; --no-build to skip), runs each
configuration under mpirun (3 workers; parameter-server runs add 3 servers: 6 ranks), one JSON record per run in
OUT/runs/, then bench/paper/figures.py (OUT/figures/*.png and *.svg) and OUT/REPRODUCTION.md. --resume skips runs
whose record exists. --check (with the run, or alone with --check-only) checks the output's content: every
record's fields, every finding's row, every figure non-empty. Python's standard library and matplotlib only.
"""

import argparse
import datetime
import json
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)

WORKERS = 3            # Table IV: 3 workers (the presets' Machines = 3)
LOCAL_BATCH = 42       # Table IV: local batch 42, global 126
EPOCHS = 10            # Table IV

# Table III: id, net, dataset. --quick runs the first.
NETS = ["lenet5_cifar10", "alexnet_cifar10", "resnet18_cifar10", "resnet18_cifar100", "resnet50_cifar10",
        "resnet50_cifar100"]
# The systems and modes of Fig. 3 (sync for all, async for TensorFlow and MXNet; ChainerMN from the usability
# paper, and CNTK with 1-bit SGD, which the usability paper left out).
SYSTEMS = [("tensorflow", "sync"), ("tensorflow", "async"), ("pytorch", "sync"), ("mxnet", "sync"),
           ("mxnet", "async"), ("chainermn", "sync"), ("cntk", "sync")]
# The swaps: (system, mode, variant) as the targets name them (bench/paper/systems.hpp). A new swap is one row
# here and one in systems.hpp. SWAP_NETS limits a swap to the nets it means something for.
SWAPS = [("tensorflow", "sync", "backend=onednn"), ("tensorflow", "async", "backend=onednn"),
         ("tensorflow", "sync", "backend=mix-conv-onednn"), ("pytorch", "sync", "backend=mix-bn-eigen"),
         ("tensorflow", "async", "sharding=disjoint"), ("pytorch", "sync", "loader=cached"),
         ("cntk", "sync", "one_bit=off")]
SWAP_NETS = {"backend=mix-bn-eigen": lambda net: net.startswith("resnet")}  # LeNet-5 and AlexNet have no batch norm
PARAMETER_SERVER = {("tensorflow", "async"), ("mxnet", "sync"), ("mxnet", "async")}
PHASES = ["load", "forward", "backward", "comm_exposed", "comm_hidden", "update"]
RECORD_FIELDS = ["schema", "system", "variant", "swap", "net", "dataset", "input", "data_generated", "data_path",
                 "mode", "backend", "strategy", "loader", "sharding", "ranks", "workers", "servers", "local_batch",
                 "global_batch", "threads_per_rank", "binding", "cpu_model", "epochs", "steps_per_epoch",
                 "epoch_seconds", "total_seconds", "averaged_epochs", "time_per_epoch_seconds",
                 "phases_seconds_per_epoch",
                 "operators_seconds_per_epoch", "peak_rss_bytes_per_rank", "accuracy", "gradient_bytes_per_step"]


def run_name(system, mode, variant, net):
    return f"{system}-{mode}-{variant.replace('=', '_')}-{net}"


def plan(nets):
    """Every run of the matrix: (system, mode, variant, net)."""
    runs = []
    for net in nets:
        for system, mode in SYSTEMS:
            runs.append((system, mode, "preset", net))
        for system, mode, variant in SWAPS:
            if SWAP_NETS.get(variant, lambda n: True)(net):
                runs.append((system, mode, variant, net))
    return runs


def mpirun_command(args, system, mode, ranks):
    cores = os.cpu_count() or 1
    threads = args.threads or max(1, cores // ranks)
    cmd = ["mpirun", "-np", str(ranks)]
    if os.geteuid() == 0:
        cmd.append("--allow-run-as-root")
    if ranks * threads <= cores:
        binding = f"core, {threads} per rank (--map-by slot:PE={threads})"
        cmd += ["--bind-to", "core", "--map-by", f"slot:PE={threads}"]
    else:
        binding = f"none (oversubscribed: {ranks} ranks x {threads} threads on {cores} cores)"
        cmd += ["--oversubscribe", "--bind-to", "none"]
    cmd += ["-x", f"OMP_NUM_THREADS={threads}", "-x", "OMP_WAIT_POLICY=PASSIVE"]
    return cmd, threads, binding


def run_all(args, runs, build_dir, out):
    runs_dir = os.path.join(out, "runs")
    os.makedirs(runs_dir, exist_ok=True)
    failures = []
    for i, (system, mode, variant, net) in enumerate(runs):
        name = run_name(system, mode, variant, net)
        path = os.path.join(runs_dir, name + ".json")
        if args.resume and os.path.exists(path):
            continue
        ranks = WORKERS * (2 if (system, mode) in PARAMETER_SERVER else 1)
        cmd, threads, binding = mpirun_command(args, system, mode, ranks)
        exe = os.path.join(build_dir, "bench", "paper", f"paper_{system}_{net}")
        cmd += [exe, "--mode", mode, "--variant", variant, "--epochs", str(args.epochs), "--steps", str(args.steps),
                "--batch", str(LOCAL_BATCH), "--threads", str(threads), "--binding", binding,
                "--eval-samples", str(args.eval_samples), "--json", path]
        data = args.data100 if net.endswith("cifar100") else args.data
        if data:
            cmd += ["--data", data]
        else:
            cmd += ["--generated-dir", os.path.join(out, "generated"),
                    "--generated-samples", str(args.generated_samples)]
        print(f"[{i + 1}/{len(runs)}] {name}: {ranks} ranks x {threads} threads", flush=True)
        start = time.time()
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode != 0 or not os.path.exists(path):
            failures.append({"run": name, "command": " ".join(cmd), "returncode": p.returncode,
                             "stderr": p.stderr[-2000:]})
            print(f"  FAILED ({p.returncode}): {p.stderr.strip()[-500:]}", flush=True)
        else:
            print(f"  {p.stdout.strip()} [{time.time() - start:.1f} s]", flush=True)
    with open(os.path.join(out, "failures.json"), "w") as f:
        json.dump(failures, f, indent=1)
    return failures


def load_records(out):
    runs_dir = os.path.join(out, "runs")
    records = []
    for name in sorted(os.listdir(runs_dir)) if os.path.isdir(runs_dir) else []:
        if name.endswith(".json"):
            with open(os.path.join(runs_dir, name)) as f:
                records.append(json.load(f))
    return records


# ----------------------------------------------------------------------------------------------------------------
# The findings: the paper's section V and abstract, each with the measure that tests it and the swap that isolates
# its cause.

class Matrix:
    """Looks records up by (system, mode, variant, net)."""

    def __init__(self, records):
        self.by = {(r["system"], r["mode"], r["variant"], net_id(r)): r for r in records}
        self.nets = [n for n in NETS if any(k[3] == n for k in self.by)]

    def get(self, system, mode, net, variant="preset"):
        return self.by.get((system, mode, variant, net))

    def epoch(self, system, mode, net, variant="preset"):
        r = self.get(system, mode, net, variant)
        return r["time_per_epoch_seconds"] if r else None

    def phase(self, system, mode, net, phase, variant="preset"):
        r = self.get(system, mode, net, variant)
        return r["phases_seconds_per_epoch"][phase] if r else None

    def op(self, system, mode, net, kinds, variant="preset"):
        r = self.get(system, mode, net, variant)
        if not r:
            return None
        ops = r["operators_seconds_per_epoch"]
        present = [k for k in kinds if k in ops]
        return sum(ops[k] for k in present) if present else None

    def memory(self, system, mode, net, variant="preset"):
        r = self.get(system, mode, net, variant)
        return max(r["peak_rss_bytes_per_rank"][:r["workers"]]) if r else None


def run_lengths(records):
    """How long each net's runs were, from the records themselves (runs resumed into one directory may differ):
    "lenet5_cifar10: 3 epochs of 396 steps; ..." with the held-out images each was evaluated on."""
    by_net = {}
    for r in records:
        acc = r.get("accuracy") or {}
        key = (r["epochs"], r["steps_per_epoch"], acc.get("test_samples"))
        by_net.setdefault(net_id(r), set()).add(key)
    parts = []
    for net in sorted(by_net, key=lambda n: NETS.index(n) if n in NETS else len(NETS)):
        lengths = ", ".join(f"{e} epochs of {s} steps" + (f" ({t} held-out images)" if t else "")
                            for e, s, t in sorted(by_net[net], key=str))
        parts.append(f"{net}: {lengths}")
    return "; ".join(parts)


def net_id(r):
    return f"{r['net']}_{r['dataset']}"


def ratio(a, b):
    return a / b if a is not None and b is not None and b > 0 else None


def mean(xs):
    xs = [x for x in xs if x is not None]
    return sum(xs) / len(xs) if xs else None


def fmt(x, unit="x"):
    if x is None:
        return "n/a"
    return f"{x:.3g}{unit}"


CONV_BACKWARD = ["convolution_backward_data", "convolution_backward_weights"]
FC_BACKWARD = ["fully_connected_backward_data", "fully_connected_backward_weights"]


def over_nets(m, f, nets=None):
    """f(net) for every net measured, with the nets that gave a value."""
    vals = [(n, f(n)) for n in (nets if nets is not None else m.nets)]
    return [(n, v) for n, v in vals if v is not None]


def describe(vals, how="mean"):
    if not vals:
        return None, "n/a (not measured in this run)"
    xs = [v for _, v in vals]
    x = max(xs) if how == "max" else sum(xs) / len(xs)
    per = ", ".join(f"{n} {v:.3g}x" for n, v in vals)
    return x, f"{x:.3g}x ({how} of {per})"


TOLERANCE = 1.1  # a ratio within 10% of 1 is no difference


def verdict(x, why_not=""):
    """The paper says x > 1: "yes" past the tolerance, otherwise "no" and why."""
    if x is None:
        return "n/a"
    if x >= TOLERANCE:
        return "yes"
    what = "no difference (within 10%)" if x > 1 / TOLERANCE else "the opposite"
    return f"no, {what}" + (f": {why_not}" if why_not else "")


def both(first, second):
    """The verdict of a finding with two parts: "yes" when both hold, "partly" (saying which) when one does."""
    if first == second or second == "n/a":
        return first
    if first == "n/a":
        return second
    if first == "yes":
        return f"partly: the first part yes; the second {second}"
    if second == "yes":
        return f"partly: the second part yes; the first {first}"
    return f"{first}; and {second}"


def findings(m):
    """Every finding of the paper's abstract and section V: a dict per row."""
    rows = []

    def add(fid, where, claim, paper, sinew, reproduced, swap, effect):
        rows.append({"id": fid, "where": where, "claim": claim, "paper": paper, "sinew": sinew,
                     "reproduced": reproduced, "swap": swap, "swap_effect": effect})

    tf_backend_swap = "`TensorFlow<Net, Sync>::with_backend<backend::OneDnn>`"

    def backend_effect(mode, nets=None):
        v = over_nets(m, lambda n: ratio(m.epoch("tensorflow", mode, n), m.epoch("tensorflow", mode, n,
                                                                                   "backend=onednn")), nets)
        x, text = describe(v)
        return text if x is None else f"TensorFlow's time / with oneDNN's operators: {text}"

    # F1 (abstract): sync TensorFlow 2.65x slower than PyTorch.
    x, text = describe(over_nets(m, lambda n: ratio(m.epoch("tensorflow", "sync", n), m.epoch("pytorch", "sync", n))))
    add("F1", "abstract, V-A", "Sync: TensorFlow is slower than PyTorch", "2.65x (mean)", text,
        verdict(x, why_not="sinew's Eigen backend is not slower than its oneDNN one for these nets here"),
        tf_backend_swap, backend_effect("sync"))
    # F2 (abstract): PyTorch lags MXNet by 1.38x in sync.
    x, text = describe(over_nets(m, lambda n: ratio(m.epoch("pytorch", "sync", n), m.epoch("mxnet", "sync", n))))
    comm = describe(over_nets(m, lambda n: ratio(m.phase("pytorch", "sync", n, "comm_exposed"),
                                                 m.phase("mxnet", "sync", n, "comm_exposed"))))[1]
    add("F2", "abstract, V-A", "Sync: PyTorch lags MXNet", "1.38x (mean)", text,
        verdict(x, why_not="sinew's synchronous parameter server (6 ranks, MPI) waits for every worker at each "
                           "step as the ring does, and on one host its servers compete with the workers for cores"),
        "the presets themselves: `MXNet<Net, Sync>` is `PyTorch<Net>::with_strategy<ParameterServer>` (and its "
        "loader options)", f"PyTorch's exposed comm / MXNet's: {comm}")
    # F3 (abstract): async MXNet 3.22x faster than TensorFlow.
    x, text = describe(over_nets(m, lambda n: ratio(m.epoch("tensorflow", "async", n), m.epoch("mxnet", "async", n))))
    add("F3", "abstract, V-A", "Async: MXNet is faster than TensorFlow", "3.22x (mean)", text,
        verdict(x, why_not="the backends are not that far apart here, and asynchronous TensorFlow's workers read "
                           "from memory (caching)"),
        "`TensorFlow<Net, Async>::with_backend<backend::OneDnn>`", backend_effect("async"))
    # F4 (V-A): sync TensorFlow 3.66x slower than MXNet.
    x, text = describe(over_nets(m, lambda n: ratio(m.epoch("tensorflow", "sync", n), m.epoch("mxnet", "sync", n))))
    add("F4", "V-A", "Sync: TensorFlow is slower than MXNet", "3.66x (mean); 3.97x ResNet-50/CIFAR-100", text,
        verdict(x), tf_backend_swap, backend_effect("sync"))
    # F5 (V summary, V-F): sync parameter server spends less time communicating than all-reduce.
    pt = mean([m.phase("pytorch", "sync", n, "comm_exposed") for n in m.nets])
    tf = mean([m.phase("tensorflow", "sync", n, "comm_exposed") for n in m.nets])
    mx = mean([m.phase("mxnet", "sync", n, "comm_exposed") for n in m.nets])
    text = "n/a" if None in (pt, tf, mx) else \
        f"MXNet {1e3 * mx:.1f} ms vs PyTorch {1e3 * pt:.1f} ms, TensorFlow {1e3 * tf:.1f} ms per epoch (mean)"
    add("F5", "V summary, V-F", "Sync parameter server spends less time communicating than all-reduce",
        "MXNet 546 vs PyTorch 870, TensorFlow 1742 (Table V)", text,
        verdict(None if None in (pt, tf, mx) else min(ratio(pt, mx), ratio(tf, mx)),
                why_not="sinew's parameter server sends every gradient to a server and waits for the new weights, "
                        "and its 3 servers share the cores with the workers; the paper credits MXNet's RPC "
                        "(ps-lite), which sinew does not model"),
        "PyTorch -> MXNet: the strategy alone (`with_strategy<ParameterServer>`)",
        fmt(ratio(pt, mx)) + " (PyTorch's exposed comm / MXNet's)")
    # F6 (V summary): MXNet better at communication, up to 3.19x, thanks to its RPC.
    def best_mode(n):
        xs = [ratio(m.phase("tensorflow", md, n, "comm_exposed"), m.phase("mxnet", md, n, "comm_exposed"))
              for md in ("sync", "async")]
        xs = [x for x in xs if x is not None]
        return max(xs) if xs else None
    v = over_nets(m, best_mode)
    x, text = describe(v, "max")
    add("F6", "V summary, V-F", "MXNet communicates faster than TensorFlow thanks to its own RPC", "up to 3.19x",
        text, verdict(x, why_not="every system here talks MPI; a difference can come only from the strategy") +
        " (the transport is not modelled: gRPC, Gloo and ps-lite are all MPI here)",
        "none possible: sinew has one transport (comm::Mpi)", "n/a")
    # F7 (V summary, V-G): TensorFlow loads faster thanks to caching.
    v = over_nets(m, lambda n: ratio(mean([m.phase("pytorch", "sync", n, "load"), m.phase("mxnet", "sync", n, "load")]),
                                     m.phase("tensorflow", "sync", n, "load")))
    x, text = describe(v)
    eff = describe(over_nets(m, lambda n: ratio(m.phase("pytorch", "sync", n, "load"),
                                                m.phase("pytorch", "sync", n, "load", "loader=cached"))))[1]
    add("F7", "V summary, V-G", "TensorFlow is superior in data loading thanks to caching",
        "qualitative (Figs. 4, 6, 8, 9)", "streaming (PyTorch, MXNet) load / TensorFlow's: " + text,
        verdict(x, why_not="the streaming loader's threads keep ahead of training here"),
        "`PyTorch<Net>::with_loader<data::CachedLoader>`", f"PyTorch's load / with caching: {eff}")
    # F8 (V-G): caching wins for LeNet-5 (loading is as long as a step).
    n = "lenet5_cifar10"
    share = ratio(m.phase("pytorch", "sync", n, "load"), m.epoch("pytorch", "sync", n))
    eff = ratio(m.epoch("pytorch", "sync", n), m.epoch("pytorch", "sync", n, "loader=cached"))
    add("F8", "V-G", "Caching wins for LeNet-5: loading a batch is as long as training on it",
        "qualitative (Fig. 4)", "n/a" if share is None else
        f"PyTorch's epoch / with caching {fmt(eff)}; its load is {100 * share:.1f}% of its epoch",
        verdict(eff, why_not="the streaming loader's worker threads hide the reads"),
        "`PyTorch<LeNet5>::with_loader<data::CachedLoader>`",
        fmt(eff) + " (PyTorch's epoch / with caching)")
    # F9 (V-G): TensorFlow needs more memory (caching).
    v = over_nets(m, lambda n: ratio(m.memory("tensorflow", "sync", n), m.memory("pytorch", "sync", n)))
    x, text = describe(v)
    eff = describe(over_nets(m, lambda n: ratio(m.memory("pytorch", "sync", n, "loader=cached"),
                                                m.memory("pytorch", "sync", n))))[1]
    add("F9", "V-G", "TensorFlow requires more memory (it caches the dataset)", "qualitative",
        "TensorFlow's peak RSS / PyTorch's: " + text, verdict(x), "`PyTorch<Net>::with_loader<data::CachedLoader>`",
        f"PyTorch's peak RSS with caching / without: {eff}")
    # F10 (V-G): TensorFlow uses more memory async than sync.
    v = over_nets(m, lambda n: ratio(m.memory("tensorflow", "async", n), m.memory("tensorflow", "sync", n)))
    x, text = describe(v)
    eff = describe(over_nets(m, lambda n: ratio(m.memory("tensorflow", "async", n),
                                                m.memory("tensorflow", "async", n, "sharding=disjoint"))))[1]
    add("F10", "V-G", "TensorFlow uses more memory asynchronously than synchronously", "qualitative",
        "async peak RSS / sync: " + text,
        verdict(x, why_not="sinew's CachedLoader converts the whole dataset on every rank in both modes "
                           "(presets/tensorflow.hpp says so)"),
        "`TensorFlow<Net, Async>` with `Sharding::disjoint`", f"peak RSS every-worker-reads-all / disjoint: {eff}")
    # F11 (V-B): LeNet-5, sync TensorFlow faster than async (async workers read everything, 2.9x reading).
    t = ratio(m.epoch("tensorflow", "async", n), m.epoch("tensorflow", "sync", n))
    ld = ratio(m.phase("tensorflow", "async", n, "load"), m.phase("tensorflow", "sync", n, "load"))
    eff = ratio(m.phase("tensorflow", "async", n, "load"), m.phase("tensorflow", "async", n, "load",
                                                                   "sharding=disjoint"))
    add("F11", "V-B", "LeNet-5: sync TensorFlow is faster than async, because async workers read the whole "
        "dataset", "async slower; its reading 2.9x the sync one",
        f"async / sync epoch {fmt(t)}, load {fmt(ld)}",
        verdict(t, why_not="sinew's CachedLoader reads from memory in both modes, so reading everything costs "
                           "nothing more; the parameter server's 6 ranks share 2 cores"),
        "`TensorFlow<LeNet5, Async>` with `Sharding::disjoint`",
        f"async load every-worker-reads-all / disjoint: {fmt(eff)}")
    # F12 (V-B): LeNet-5, TensorFlow 1.56x faster than MXNet sync.
    t = ratio(m.epoch("mxnet", "sync", n), m.epoch("tensorflow", "sync", n))
    add("F12", "V-B", "LeNet-5: sync TensorFlow is faster than sync MXNet (caching)", "1.56x", fmt(t),
        verdict(t, why_not="MXNet's loader is not the slower part here"),
        "`PyTorch<LeNet5>::with_loader<data::CachedLoader>` (MXNet's loader is PyTorch's)",
        fmt(ratio(m.epoch("pytorch", "sync", n), m.epoch("pytorch", "sync", n, "loader=cached"))) +
        " (streaming epoch / cached)")
    # F13 (V-B): LeNet-5, PyTorch 1.8x faster than MXNet; MXNet's tanh_backward 34.8x slower.
    t = ratio(m.epoch("mxnet", "sync", n), m.epoch("pytorch", "sync", n))
    o = ratio(m.op("mxnet", "sync", n, ["tanh_backward"]), m.op("pytorch", "sync", n, ["tanh_backward"]))
    add("F13", "V-B", "LeNet-5: PyTorch outperforms MXNet; MXNet's tanh_backward is slower",
        "1.8x; tanh_backward 34.8x", f"{fmt(t)}; tanh_backward {fmt(o)}",
        both(verdict(t, why_not="the presets differ only in the strategy, and the parameter server's servers share the "
                                "cores"),
             verdict(o, why_not="both presets run the same oneDNN tanh_backward; the paper's gap is MXNet 1.7's "
                                "kernel")),
        "none: the presets share the backend", "n/a")
    # F14 (V-C, V-E): TensorFlow's forward convolution is faster (1.35x AlexNet; every net but LeNet-5).
    nets = [k for k in m.nets if k != "lenet5_cifar10"] or m.nets
    v = over_nets(m, lambda k: ratio(mean([m.op("pytorch", "sync", k, ["convolution"]),
                                           m.op("mxnet", "sync", k, ["convolution"])]),
                                     m.op("tensorflow", "sync", k, ["convolution"])), nets)
    x, text = describe(v)
    eff = describe(over_nets(m, lambda k: ratio(m.op("tensorflow", "sync", k, ["convolution"]),
                                                m.op("tensorflow", "sync", k, ["convolution"], "backend=onednn")),
                             nets))[1]
    add("F14", "V-C, V-E", "TensorFlow's forward convolution is faster than oneDNN's",
        "1.35x (AlexNet, mean over the others)", "oneDNN's / Eigen's convolution: " + text +
        ("" if nets != ["lenet5_cifar10"] else " (LeNet-5 only: the paper excepts it)"),
        verdict(x, why_not="oneDNN's convolution on this AVX-512 CPU is faster than the Eigen backend's "
                           "(patches packed block by block, multiplied on oneDNN's sgemm)"),
        tf_backend_swap + "; `with_backend<Mix<Eigen, Use<layer_kind::conv2d, OneDnn>>>` (oneDNN's "
        "convolutions only)", f"Eigen's convolution / oneDNN's: {eff}; TensorFlow's forward / with oneDNN's "
        "convolutions only: " + describe(over_nets(m, lambda k: ratio(
            m.phase("tensorflow", "sync", k, "forward"),
            m.phase("tensorflow", "sync", k, "forward", "backend=mix-conv-onednn")), nets))[1])
    # F15 (V summary, V-E): TensorFlow's convolution_backward up to 7.67x slower than MXNet's.
    v = over_nets(m, lambda k: ratio(m.op("tensorflow", "sync", k, CONV_BACKWARD),
                                     m.op("mxnet", "sync", k, CONV_BACKWARD)))
    x, text = describe(v, "max")
    eff = describe(over_nets(m, lambda k: ratio(m.op("tensorflow", "sync", k, CONV_BACKWARD),
                                                m.op("tensorflow", "sync", k, CONV_BACKWARD, "backend=onednn"))),
                   "max")[1]
    add("F15", "V summary, V-E", "TensorFlow's convolution_backward is slower than MXNet's", "up to 7.67x (ResNet)",
        text, verdict(x), tf_backend_swap + "; `with_backend<Mix<Eigen, Use<layer_kind::conv2d, OneDnn>>>`",
        f"Eigen's convolution_backward / oneDNN's: {eff}; TensorFlow's backward / with oneDNN's convolutions "
        "only (their reorders included): " + describe(over_nets(m, lambda k: ratio(
            m.phase("tensorflow", "sync", k, "backward"),
            m.phase("tensorflow", "sync", k, "backward", "backend=mix-conv-onednn"))))[1])
    # F16 (V-C): AlexNet, TensorFlow's backward 3.32x slower than PyTorch's; fully_connected_backward 3.03x.
    k = "alexnet_cifar10"
    b = ratio(m.phase("tensorflow", "sync", k, "backward"), m.phase("pytorch", "sync", k, "backward"))
    fc = ratio(m.op("tensorflow", "sync", k, FC_BACKWARD), m.op("pytorch", "sync", k, FC_BACKWARD))
    add("F16", "V-C", "AlexNet: TensorFlow's backward is slower than PyTorch's (fully_connected_backward too)",
        "3.32x; fully_connected_backward 3.03x", f"{fmt(b)}; fully_connected_backward {fmt(fc)}", verdict(b),
        tf_backend_swap, fmt(ratio(m.phase("tensorflow", "sync", k, "backward"),
                                   m.phase("tensorflow", "sync", k, "backward", "backend=onednn"))) +
        " (TensorFlow's backward / with oneDNN's)")
    # F17 (V-C): AlexNet, MXNet's weights_update 5.1x slower than PyTorch's.
    o = ratio(m.op("mxnet", "sync", k, ["weights_update"]), m.op("pytorch", "sync", k, ["weights_update"]))
    add("F17", "V-C", "AlexNet: MXNet's weights_update is slower than PyTorch's", "5.1x", fmt(o),
        verdict(o, why_not="sinew's parameter server steps on the servers, so a worker's weights_update is "
                           "only copying the pulled weights"),
        "none: both use optim::Sgd; the strategy decides where the step runs", "n/a")
    # F18 (V-C, V-F): AlexNet, MXNet's communication 1.9x faster than PyTorch's.
    c = ratio(m.phase("pytorch", "sync", k, "comm_exposed"), m.phase("mxnet", "sync", k, "comm_exposed"))
    add("F18", "V-C, V-F", "AlexNet: MXNet communicates faster than PyTorch", "1.9x", fmt(c), verdict(c),
        "PyTorch -> MXNet: the strategy alone", fmt(c))
    # F19 (V summary, V-D): PyTorch's batch_norm 29.7x, batch_norm_backward 21.4x slower than MXNet's.
    res = [k for k in m.nets if k.startswith("resnet")]
    v1 = describe(over_nets(m, lambda k: ratio(m.op("pytorch", "sync", k, ["batch_norm"]),
                                               m.op("mxnet", "sync", k, ["batch_norm"])), res), "max")
    v2 = describe(over_nets(m, lambda k: ratio(m.op("pytorch", "sync", k, ["batch_norm_backward"]),
                                               m.op("mxnet", "sync", k, ["batch_norm_backward"])), res), "max")
    add("F19", "V summary, V-D", "PyTorch's batch_norm and batch_norm_backward are slower than MXNet's",
        "29.7x and 21.4x (ResNet)", f"batch_norm {v1[1]}; batch_norm_backward {v2[1]}",
        "n/a (no ResNet in this run)" if v1[0] is None else
        verdict(v1[0], why_not="PyTorch 1.7's CPU batch_norm was its own kernel, not oneDNN's; both presets "
                               "run oneDNN's here"),
        "`PyTorch<Net>::with_backend<backend::Mix<OneDnn, Use<BatchNorm2d, Eigen>>>`",
        "PyTorch's batch_norm with Eigen's / with oneDNN's: " + describe(over_nets(m, lambda k: ratio(
            m.op("pytorch", "sync", k, ["batch_norm"], "backend=mix-bn-eigen"),
            m.op("pytorch", "sync", k, ["batch_norm"])), res))[1])
    # F20 (V-D): ResNet, PyTorch's forward 1.34x slower than MXNet's, comm 1.36x more.
    f = describe(over_nets(m, lambda k: ratio(m.phase("pytorch", "sync", k, "forward"),
                                              m.phase("mxnet", "sync", k, "forward")), res))
    add("F20", "V-D", "ResNet: PyTorch's forward pass is slower than MXNet's (batch_norm)", "1.34x", f[1],
        "n/a (no ResNet in this run)" if f[0] is None else
        verdict(f[0], why_not="the same oneDNN operators on both"),
        "none: the presets share the backend", "n/a")
    # F21 (usability paper 4.6.2): CNTK's 1-bit SGD "accelerate[s] the synchronization" (left out of its runs).
    t = describe(over_nets(m, lambda k: ratio(m.epoch("cntk", "sync", k, "one_bit=off"), m.epoch("cntk", "sync", k))))
    b = describe(over_nets(m, lambda k: ratio((m.get("cntk", "sync", k, "one_bit=off") or {}).get(
        "gradient_bytes_per_step"), (m.get("cntk", "sync", k) or {}).get("gradient_bytes_per_step"))))
    add("F21", "usability paper 4.6.2", "CNTK: 1-bit SGD accelerates the synchronization",
        "not measured (left out \"due to the limited usability\")",
        f"epoch time without / with 1-bit SGD: {t[1]}; gradient bytes per step without / with: {b[1]}",
        verdict(t[0], why_not="on one host the all-reduce moves through shared memory, where encoding and "
                              "decoding cost more than the bytes they save; 1-bit SGD pays on slow links"),
        "`CNTK<Net>::without_one_bit` (plain MPI all-reduce, ChainerMN's configuration)", b[1])
    return rows


def table5(m):
    """Table V: mean exposed communication per epoch over the CIFAR-10 nets, per system and mode."""
    cells = [("tensorflow", "sync", 1741.81), ("pytorch", "sync", 869.51), ("mxnet", "sync", 546.19),
             ("tensorflow", "async", 586.65), ("mxnet", "async", 410.54)]
    c10 = [n for n in m.nets if n.endswith("cifar10")]
    return [(s, md, paper, mean([m.phase(s, md, n, "comm_exposed") for n in c10])) for s, md, paper in cells]


def write_report(out, records, failures, figures, args):
    m = Matrix(records)
    rows = findings(m)
    generated = sorted({net_id(r) for r in records if r["data_generated"]})
    lines = ["# Reproducing Krisilias et al. 2021 with sinew", ""]
    lines.append(f"Written by `bench/paper/run_matrix.py` on {datetime.datetime.utcnow():%Y-%m-%d %H:%M} UTC"
                 f"{' (--quick)' if args.quick else ''}. Paper: *A Performance Evaluation of Distributed Deep "
                 "Learning Frameworks on CPU Clusters Using Image Classification Workloads* (section V and abstract).")
    lines.append("")
    if generated:
        lines += [f"> **GENERATED DATA, NOT CIFAR: {', '.join(generated)} trained on generated images of the "
                  "dataset's shape (each class a colour with noise). Times and ratios are real measurements of "
                  "these shapes; accuracies say nothing about CIFAR.**", ""]
    if records:
        r0 = records[0]
        lines.append(f"Machine: {r0['cpu_model']}, {os.cpu_count()} cores. {WORKERS} workers, local batch "
                     f"{r0['local_batch']}, global {r0['global_batch']} (Table IV); {run_lengths(records)}; all "
                     "ranks on one host (no emulated hosts), so communication is shared memory, not the paper's "
                     "10 Gbit/s links.")
        lines.append("")
        lines.append("Ranks, threads and binding of each run are in its record and the table at the end. Figures "
                     "measured on a machine that may have been loaded: compare ratios within one run, not with "
                     "another machine.")
        lines.append("")
    lines += ["## Findings", "",
              "| # | where | finding | paper | sinew | reproduced | swap that isolates the cause | "
              "its measured effect |",
              "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        cells = [r["id"], r["where"], r["claim"], r["paper"], r["sinew"], r["reproduced"], r["swap"],
                 r["swap_effect"]]
        lines.append("| " + " | ".join(str(c).replace("|", "/") for c in cells) + " |")
    lines += ["", "## Table V: mean communication time per system (exposed, per epoch, CIFAR-10 nets)", "",
              "| system | mode | paper (s) | sinew (ms per epoch) |", "|---|---|---|---|"]
    for s, md, paper, x in table5(m):
        lines.append(f"| {s} | {md} | {paper} | {'n/a' if x is None else f'{1e3 * x:.2f}'} |")
    lines += ["", "## Figures", ""]
    for f in figures:
        lines.append(f"- [{os.path.basename(f)}](figures/{os.path.basename(f)})")
    extra = [p for p in (os.path.join(out, "scaling.json"), os.path.join(out, "time_to_accuracy.json"),
                         os.path.join(ROOT, "results", "scaling.json"),
                         os.path.join(ROOT, "results", "time_to_accuracy.json")) if os.path.exists(p)]
    if extra:
        lines += ["", "## Scalability and time to accuracy (written by their own scripts)", ""]
        for p in extra:
            lines.append(f"- `{os.path.relpath(p, out)}`: present ({os.path.getsize(p)} bytes)")
    lines += ["", "## Runs", "",
              "| system | variant | net | mode | ranks (workers) | threads | s/epoch | load | fwd | bwd | comm exp. | "
              "comm hid. | update | test acc. | peak RSS (MiB, max worker) |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in records:
        p = r["phases_seconds_per_epoch"]
        acc = r["accuracy"]["test"]
        lines.append(f"| {r['system']} | {r['variant']} | {net_id(r)} | {r['mode']} | {r['ranks']} ({r['workers']}) "
                     f"| {r['threads_per_rank']} | {r['time_per_epoch_seconds']:.3f} | "
                     + " | ".join(f"{p[k]:.3f}" for k in PHASES)
                     + f" | {'n/a' if acc is None else f'{acc:.3f}'} | "
                     f"{max(r['peak_rss_bytes_per_rank'][:r['workers']]) / 2**20:.0f} |")
    if records:
        lines += ["", f"Binding: {records[0]['binding']}."]
    if failures:
        lines += ["", "## Runs that failed", ""]
        for f in failures:
            lines.append(f"- {f['run']} (exit {f['returncode']}): `{f['stderr'].strip()[-300:]}`")
    with open(os.path.join(out, "REPRODUCTION.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    with open(os.path.join(out, "findings.json"), "w") as f:
        json.dump(rows, f, indent=1)
    return rows


# ----------------------------------------------------------------------------------------------------------------

def check(out, expected_runs):
    """Checks the output's content; returns the problems (empty: all good)."""
    import figures as figs  # noqa: the sibling script
    problems = []
    records = load_records(out)
    names = {run_name(r["system"], r["mode"], r["variant"], net_id(r)) for r in records}
    for run in expected_runs:
        if run_name(*run) not in names:
            problems.append(f"no record for {run_name(*run)}")
    for r in records:
        who = run_name(r["system"], r["mode"], r["variant"], net_id(r))
        missing = [k for k in RECORD_FIELDS if k not in r]
        if missing:
            problems.append(f"{who}: fields missing: {missing}")
            continue
        if len(r["epoch_seconds"]) != r["epochs"] or not all(x > 0 for x in r["epoch_seconds"]):
            problems.append(f"{who}: epoch_seconds {r['epoch_seconds']} is not {r['epochs']} positive times")
        if len(r["peak_rss_bytes_per_rank"]) != r["ranks"] or min(r["peak_rss_bytes_per_rank"]) <= 0:
            problems.append(f"{who}: peak_rss_bytes_per_rank is not {r['ranks']} positive sizes")
        if sorted(r["phases_seconds_per_epoch"]) != sorted(PHASES):
            problems.append(f"{who}: phases are {sorted(r['phases_seconds_per_epoch'])}")
        elif r["phases_seconds_per_epoch"]["forward"] <= 0 or r["phases_seconds_per_epoch"]["backward"] <= 0:
            problems.append(f"{who}: forward or backward took no time")
        for op in ("convolution", "convolution_backward_weights"):
            if r["operators_seconds_per_epoch"].get(op, 0) <= 0:
                problems.append(f"{who}: operator {op} missing from the profile")
        acc = r["accuracy"]
        if not isinstance(acc.get("test"), (int, float)) or not 0 <= acc["test"] <= 1 or acc["test_samples"] <= 0:
            problems.append(f"{who}: held-out accuracy {acc} is not a fraction of some samples")
        if r["global_batch"] != r["local_batch"] * r["workers"] or r["workers"] != WORKERS:
            problems.append(f"{who}: batches {r['local_batch']} x {r['workers']} != {r['global_batch']}")
        if r["system"] in ("mxnet",) or (r["system"], r["mode"]) == ("tensorflow", "async"):
            if r["servers"] != WORKERS:
                problems.append(f"{who}: {r['servers']} servers, expected {WORKERS}")
    report = os.path.join(out, "REPRODUCTION.md")
    if not os.path.exists(report):
        problems.append("REPRODUCTION.md missing")
    else:
        text = open(report).read()
        rows = findings(Matrix([r for r in records if all(k in r for k in RECORD_FIELDS)]))
        for row in rows:
            line = [ln for ln in text.splitlines() if ln.startswith(f"| {row['id']} |")]
            if not line:
                problems.append(f"REPRODUCTION.md has no row for finding {row['id']}")
            elif line[0].count("|") < 9:
                problems.append(f"REPRODUCTION.md's row {row['id']} has too few cells")
        for needle in ("2.65x", "1.38x", "3.22x", "7.67x", "Table V", "GENERATED DATA" if any(
                r["data_generated"] for r in records) else "Findings"):
            if needle not in text:
                problems.append(f"REPRODUCTION.md does not mention {needle!r}")
        measured = [r for r in rows if r["reproduced"].startswith(("yes", "no", "partly"))]
        if len(measured) < 8:
            problems.append(f"only {len(measured)} findings were measured (yes/no), expected at least 8")
    for fig in figs.expected(Matrix([r for r in records if "net" in r and "dataset" in r]).nets):
        for ext, magic in (("png", b"\x89PNG"), ("svg", b"<svg")):
            path = os.path.join(out, "figures", f"{fig}.{ext}")
            if not os.path.exists(path) or os.path.getsize(path) < 2000:
                problems.append(f"figure {fig}.{ext} missing or nearly empty")
            elif magic not in open(path, "rb").read(4096):
                problems.append(f"figure {fig}.{ext} is not a {ext.upper()}")
    return problems


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="LeNet-5 only, 3 epochs of 4 steps, generated data "
                                                         "(unless --data): minutes")
    ap.add_argument("--data", help="CIFAR-10 binary directory (cifar-10-batches-bin); none: generated data")
    ap.add_argument("--data100", help="CIFAR-100 binary directory (cifar-100-binary); none: generated data of its "
                                      "shape, said loudly in the report")
    ap.add_argument("--epochs", type=int, help=f"epochs of every run (default {EPOCHS}; --quick 3)")
    ap.add_argument("--steps", type=int, help="at most this many steps per epoch (default whole epochs; --quick 4)")
    ap.add_argument("--nets", help="comma-separated subset of " + ",".join(NETS))
    ap.add_argument("--threads", type=int, default=0, help="threads per rank (default: cores / ranks, at least 1)")
    ap.add_argument("--eval-samples", type=int, help="held-out images evaluated (default 10000; --quick 120)")
    ap.add_argument("--generated-samples", type=int, help="generated training images (default 50000; --quick 600)")
    ap.add_argument("--out", default="paper-out", help="output directory (default paper-out)")
    ap.add_argument("--build-dir", default=os.path.join(ROOT, "build"), help="CMake build directory")
    ap.add_argument("--no-build", action="store_true", help="do not build the targets first")
    ap.add_argument("--resume", action="store_true", help="skip runs whose record exists")
    ap.add_argument("--check", action="store_true", help="check the output's content afterwards (exit 1 if not)")
    ap.add_argument("--check-only", action="store_true", help="only check OUT (no runs)")
    args = ap.parse_args()
    args.epochs = args.epochs or (3 if args.quick else EPOCHS)
    args.steps = args.steps if args.steps is not None else (4 if args.quick else 0)
    args.eval_samples = args.eval_samples if args.eval_samples is not None else (120 if args.quick else 10000)
    args.generated_samples = args.generated_samples or (600 if args.quick else 50000)
    nets = args.nets.split(",") if args.nets else (NETS[:1] if args.quick else NETS)
    for n in nets:
        if n not in NETS:
            sys.exit(f"run_matrix: --nets: {n} is not one of {','.join(NETS)}")
    runs = plan(nets)
    out = os.path.abspath(args.out)
    os.makedirs(out, exist_ok=True)
    if not args.check_only:
        if not args.resume:  # a fresh matrix: no record or figure of an earlier one may stay
            for sub in ("runs", "figures"):
                shutil.rmtree(os.path.join(out, sub), ignore_errors=True)
        if shutil.which("mpirun") is None:
            sys.exit("run_matrix: mpirun not found (scripts/install-deps installs Open MPI)")
        targets = sorted({f"paper_{s}_{n}" for s, _, _, n in runs})
        if not args.no_build:
            print("building " + " ".join(targets), flush=True)
            subprocess.run(["cmake", "--build", args.build_dir, "--target"] + targets, check=True)
        for t in targets:
            if not os.path.exists(os.path.join(args.build_dir, "bench", "paper", t)):
                sys.exit(f"run_matrix: {t} is not built in {args.build_dir} (leave out --no-build, or "
                         f"cmake --build {args.build_dir} --target {t})")
        generated = sorted({n for n in nets if not (args.data100 if n.endswith("cifar100") else args.data)})
        if generated:
            print(f"run_matrix: NO DATA GIVEN for {', '.join(generated)}: they train on GENERATED images of the "
                  "dataset's shape (--data / --data100 for CIFAR); REPRODUCTION.md says so at the top", flush=True)
        failures = run_all(args, runs, args.build_dir, out)
        records = load_records(out)
        import figures as figs
        written = figs.draw_all(records, os.path.join(out, "figures"))
        rows = write_report(out, records, failures, written, args)
        print(f"{len(records)} records, {len(written)} figures, {len(rows)} findings: "
              f"{os.path.join(out, 'REPRODUCTION.md')}")
    if args.check or args.check_only:
        problems = check(out, runs)
        for p in problems:
            print("check: " + p)
        if problems:
            sys.exit(1)
        print("check: every record, finding and figure is there")


if __name__ == "__main__":
    main()
