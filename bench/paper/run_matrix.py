#!/usr/bin/python3
"""The paper's experiment as one command: Krisilias et al. 2021 (../shared/papers/cpu-cluster-frameworks-2021.txt),
Table III nets x systems x modes with Table IV's settings, the one-policy swaps that isolate each finding's cause,
the figures as the paper draws them, and REPRODUCTION.md saying which findings hold, by how much.

  /usr/bin/python3 bench/paper/run_matrix.py --quick                       # minutes, generated data, LeNet-5
  /usr/bin/python3 bench/paper/run_matrix.py --data ../shared/data/cifar-10-batches-bin \\
          [--data100 DIR] [--hosts 2 --link 1gbit] [--out paper-out]      # the whole matrix (hours)

It builds the bench/paper targets it needs (--build-dir, default build/; --no-build to skip), runs each
configuration under mpirun (on one host: 3 workers, and parameter-server runs add 3 servers; with --hosts H on
scripts/cluster hosts: one worker per host and a parameter server's servers one per host beside it), --repeats
times, interleaved (every run once, then every run again), each repeat --warmup steps and then --timed-steps
timed steps; one JSON record per run in OUT/runs/ holding every repeat (OUT/runs/repeats/ keeps each repeat's
own record), then bench/paper/figures.py (OUT/figures/*.png and *.svg) and OUT/REPRODUCTION.md. --resume skips
repeats whose record exists. --check (with the run, or alone with --check-only) checks the output's content:
every record's fields, every finding's row, every figure non-empty. Python's standard library and matplotlib only.
"""

import argparse
import datetime
import json
import os
import shutil
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)

WORKERS = 3            # Table IV: 3 workers (the presets' Machines = 3)
LOCAL_BATCH = 42       # Table IV: local batch 42, global 126
EPOCHS = 10            # Table IV
# Per-step timing (issue 31): steps before the timing, then timed steps, per repeat; repeats per configuration.
WARMUP = 10
TIMED_STEPS = {"lenet5_cifar10": 200}  # the others: TIMED_STEPS_DEFAULT
TIMED_STEPS_DEFAULT = 50
REPEATS = 3
# The paper's epoch: CIFAR's 50000 training images in global batches of 126 (Table IV), so per-step times scale
# to its seconds per epoch (Table V) whatever length sinew ran.
PAPER_STEPS_PER_EPOCH = 50000 // (WORKERS * LOCAL_BATCH)
# The links --link shapes (scripts/cluster up --bandwidth), in bits per second; none: unshaped veth.
LINKS = {"1gbit": 1e9, "10gbit": 1e10, "none": None}
CLUSTER = os.path.join(ROOT, "scripts", "cluster")

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
                 "operators_seconds_per_epoch", "peak_rss_bytes_per_rank", "accuracy", "gradient_bytes_per_step",
                 # schema 3 (/work/h37/schema.md; bench/paper/README.md): per-step figures over repeats
                 "commit", "stack", "placement", "link", "warmup_steps", "timed_steps", "repeats", "step_seconds",
                 "phases_seconds_per_step", "operators_seconds_per_step", "parameters", "schedule"]
SCHEMA = "sinew.paper.run/3"


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


def timed_steps(args, net):
    return args.timed_steps or TIMED_STEPS.get(net, TIMED_STEPS_DEFAULT)


def target_of(system, mode, net, hosts):
    """The target of a run: a parameter-server system on H hosts other than the paper's 3 needs its own
    (a server per host is a compile-time count; bench/paper/CMakeLists.txt's SINEW_PAPER_HOSTS)."""
    if hosts and hosts != WORKERS and system in ("tensorflow", "mxnet"):
        return f"paper_{system}_{net}_{hosts}hosts"
    return f"paper_{system}_{net}"


def ranks_of(args, system, mode):
    workers = args.hosts or WORKERS
    return workers, workers * (2 if (system, mode) in PARAMETER_SERVER else 1)


def mpirun_command(args, system, mode, ranks):
    """mpirun's command, the threads per rank and the binding in words, on one host or across --hosts."""
    cores = os.cpu_count() or 1
    if args.hosts:
        per_host = ranks // args.hosts
        # scripts/cluster pins host i to core(s) of its own while hosts x slots fit the cores (slots 1 here:
        # the servers share their worker's core); with more hosts than cores every host sees them all.
        own = cores // args.hosts if args.hosts <= cores else 0
        # sharing: every rank of every host on the same cores, so the threads split them all
        threads = args.threads or max(1, own // per_host if own else cores // ranks)
        where = f"{own} core{'s' if own > 1 else ''} of its own (taskset)" if own else \
            f"all {cores} cores, shared by the {args.hosts} hosts (more hosts than cores)"
        binding = (f"{args.hosts} scripts/cluster hosts, each on {where}; {per_host} rank{'s' if per_host > 1 else ''}"
                   f" per host (--map-by node), {threads} thread{'s' if threads > 1 else ''} each")
        if own and per_host * threads > own:
            binding += f"; oversubscribed: {per_host * threads} threads on {own} core{'s' if own > 1 else ''}"
        elif not own and ranks * threads > cores:
            binding += f"; oversubscribed: {ranks * threads} threads on {cores} cores"
        cmd = [CLUSTER, "run", "--", "mpirun", "-np", str(ranks), "--map-by", "node", "--oversubscribe"]
    else:
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


class Cluster:
    """scripts/cluster's hosts for the whole matrix (one per link), removed on leaving, also on failure."""

    def __init__(self, hosts, link):
        self.hosts, self.link = hosts, link
        self.env = dict(os.environ, SINEW_CLUSTER=f"pm{os.getpid() % 10000}")

    def __enter__(self):
        why = subprocess.run([CLUSTER, "check"], capture_output=True, text=True, env=self.env)
        if why.returncode != 0:
            print(f"run_matrix: --hosts needs scripts/cluster: {why.stdout.strip()}; skipping", flush=True)
            sys.exit(77)
        cmd = [CLUSTER, "up", str(self.hosts), "--slots", "1"]
        if LINKS[self.link]:
            cmd += ["--bandwidth", self.link]
        subprocess.run([CLUSTER, "down"], env=self.env, check=True)
        subprocess.run(cmd, env=self.env, check=True)
        return self

    def __exit__(self, *exc):
        subprocess.run([CLUSTER, "down"], env=self.env)
        return False


def repeat_path(out, name, k):
    return os.path.join(out, "runs", "repeats", f"{name}.r{k + 1}.json")


def run_all(args, runs, build_dir, out, env=None):
    """Every run --repeats times, interleaved: repeat k of every run before repeat k + 1 of any, so that a slow
    spell of the machine falls on every configuration alike rather than on one."""
    os.makedirs(os.path.join(out, "runs", "repeats"), exist_ok=True)
    failures = []
    total = len(runs) * args.repeats
    for k in range(args.repeats):
        for i, (system, mode, variant, net) in enumerate(runs):
            name = run_name(system, mode, variant, net)
            path = repeat_path(out, name, k)
            if args.resume and os.path.exists(path):
                continue
            workers, ranks = ranks_of(args, system, mode)
            cmd, threads, binding = mpirun_command(args, system, mode, ranks)
            exe = os.path.join(build_dir, "bench", "paper", target_of(system, mode, net, args.hosts))
            steps = args.warmup + timed_steps(args, net)
            cmd += [exe, "--mode", mode, "--variant", variant, "--epochs", str(args.epochs or 1),
                    "--steps", str(args.steps or steps), "--warmup", str(args.warmup), "--pingpong",
                    "--batch", str(LOCAL_BATCH), "--threads", str(threads), "--binding", binding,
                    "--eval-samples", str(args.eval_samples), "--json", path]
            data = args.data100 if net.endswith("cifar100") else args.data
            if data:
                cmd += ["--data", data]
            else:
                cmd += ["--generated-dir", os.path.join(out, "generated"),
                        "--generated-samples", str(args.generated_samples)]
            print(f"[{k * len(runs) + i + 1}/{total}] {name} (repeat {k + 1}): {ranks} ranks x {threads} threads",
                  flush=True)
            start = time.time()
            p = subprocess.run(cmd, capture_output=True, text=True, env=env)
            if p.returncode != 0 or not os.path.exists(path):
                failures.append({"run": name, "repeat": k + 1, "command": " ".join(cmd),
                                 "returncode": p.returncode, "stderr": (p.stderr + p.stdout)[-2000:]})
                print(f"  FAILED ({p.returncode}): {(p.stderr + p.stdout).strip()[-500:]}", flush=True)
            else:
                print(f"  {p.stdout.strip().splitlines()[-1]} [{time.time() - start:.1f} s]", flush=True)
    with open(os.path.join(out, "failures.json"), "w") as f:
        json.dump(failures, f, indent=1)
    return failures


def median(xs):
    xs = sorted(x for x in xs if x is not None)
    if not xs:
        return None
    h = len(xs) // 2
    return xs[h] if len(xs) % 2 else 0.5 * (xs[h - 1] + xs[h])


def git_commit(out=None):
    """HEAD, with "-dirty" when a tracked file differs from it; the output folder `out` does not count (a run
    resumed into a committed result rewrites its report before the next one starts)."""
    try:
        head = subprocess.run(["git", "-C", ROOT, "rev-parse", "HEAD"], capture_output=True, text=True,
                              check=True).stdout.strip()
        spec = ["--", ".", f":(exclude){os.path.relpath(out, ROOT)}"] if out and \
            not os.path.relpath(out, ROOT).startswith("..") else []
        dirty = subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no"] + spec,
                               capture_output=True, text=True).stdout.strip()
        return head + ("-dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return None


def os_name():
    try:
        for line in open("/etc/os-release"):
            if line.startswith("PRETTY_NAME="):
                return line.split("=", 1)[1].strip().strip('"')
    except OSError:
        pass
    return None


def schedule_of(r):
    """The strategy's communication schedule, as the model (bench/paper/model.py) reads it (schema.md)."""
    strategy = r["strategy"]
    kind = "parameter_server" if strategy.startswith("parameter_server") else \
        "ring" if strategy.startswith("ring") else "mpi_allreduce" if strategy.startswith("mpi_allreduce") else \
        "local" if r["ranks"] == 1 else None
    # PyTorch's ring: DDP's 25 MiB buckets overlapping backward (presets/pytorch.hpp); TensorFlow's: one all-reduce
    # after backward (bucket_bytes 0).
    bucket = 25 * 2**20 if (kind == "ring" and r["system"] == "pytorch") else (0 if kind == "ring" else None)
    return {"kind": kind, "sync": r["mode"], "servers": r["servers"], "bucket_bytes": bucket,
            "compression": "one_bit" if "onebit" in strategy else "none",
            "bytes_on_wire_per_step": r.get("gradient_bytes_per_step")}


def merge_repeats(out, runs, args, commit):
    """OUT/runs/NAME.json from its repeats (schema 3): the median repeat's record, every repeat kept, medians
    and spread of the per-step figures."""
    stack_os = os_name()
    for system, mode, variant, net in runs:
        name = run_name(system, mode, variant, net)
        reps = []
        for k in range(args.repeats):
            path = repeat_path(out, name, k)
            if os.path.exists(path):
                with open(path) as f:
                    reps.append(json.load(f))
        if not reps:
            continue
        steps = [x["step_seconds_median"] for x in reps]
        mid = sorted(range(len(reps)), key=lambda i: steps[i])[(len(reps) - 1) // 2]
        r = dict(reps[mid])
        r["schema"] = SCHEMA
        r["commit"] = commit
        stack = dict(r.get("stack") or {})
        if stack.get("compiler", "")[:1].isdigit():
            stack["compiler"] = "GCC " + stack["compiler"]
        stack["os"] = stack_os
        r["stack"] = stack
        hosts = args.hosts or 1
        per_host = r["ranks"] // hosts
        cores = os.cpu_count() or 1
        r["placement"] = {"hosts": hosts, "workers_per_host": r["workers"] // hosts,
                          "servers_per_host": r["servers"] // hosts,
                          "cores_per_host": (cores // hosts if hosts <= cores else cores) if args.hosts else cores,
                          "threads_per_rank": r["threads_per_rank"], "ranks_per_host": per_host,
                          "binding": r["binding"], "emulated": bool(args.hosts)}
        r["link"] = {"name": args.link if args.hosts else "none",
                     "rate_bits_per_second": LINKS[args.link] if args.hosts else None,
                     # the medians over the repeats (each repeat's own is in repeats[])
                     "alpha_seconds": median([x.get("link_alpha_seconds") for x in reps]),
                     "beta_seconds_per_byte": median([x.get("link_beta_seconds_per_byte") for x in reps]),
                     "between": "ranks 0 and 1 (hosts h0 and h1)" if args.hosts else "ranks 0 and 1 (one host)"}
        # step_seconds_mean beside the median: the phases are means (over steps, then workers), so they sum to about
        # the mean step (each step's slowest worker's: a little more)
        r["repeats"] = [{"step_seconds": x["step_seconds_median"],
                         "step_seconds_mean": mean(x["step_seconds_each"]),
                         "phases_seconds_per_step": x["phases_seconds_per_step"],
                         "operators_seconds_per_step": x["operators_seconds_per_step"],
                         "step_seconds_each": x["step_seconds_each"], "epoch_seconds": x["epoch_seconds"],
                         "peak_rss_bytes_per_rank": x["peak_rss_bytes_per_rank"], "accuracy": x["accuracy"],
                         "link_alpha_seconds": x.get("link_alpha_seconds"),
                         "link_beta_seconds_per_byte": x.get("link_beta_seconds_per_byte")} for x in reps]
        r.pop("step_seconds_each", None)
        r.pop("step_seconds_median", None)
        r["step_seconds"] = {"median": median(steps), "min": min(steps), "max": max(steps), "repeats": steps}
        r["phases_seconds_per_step"] = {ph: median([x["phases_seconds_per_step"][ph] for x in reps])
                                        for ph in PHASES}
        kinds = sorted({kk for x in reps for kk in x["operators_seconds_per_step"]})
        r["operators_seconds_per_step"] = {kk: median([x["operators_seconds_per_step"].get(kk) for x in reps])
                                           for kk in kinds}
        r["schedule"] = schedule_of(r)
        with open(os.path.join(out, "runs", name + ".json"), "w") as f:
            json.dump(r, f, indent=1)


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
    """Looks records up by (system, mode, variant, net). Times are per step (the median over repeats of each
    repeat's median step, schema 3), the unit of comparison whatever the runs' lengths; records of schema 1 and 2
    (one run, epochs) give their epoch's mean step instead."""

    def __init__(self, records):
        self.by = {(r["system"], r["mode"], r["variant"], net_id(r)): r for r in records}
        self.nets = [n for n in NETS if any(k[3] == n for k in self.by)]
        self.floor, self.floor_why = noise_floor(self)

    def get(self, system, mode, net, variant="preset"):
        return self.by.get((system, mode, variant, net))

    def step(self, system, mode, net, variant="preset"):
        r = self.get(system, mode, net, variant)
        return step_of(r) if r else None

    def spread(self, system, mode, net, variant="preset"):
        """The repeats' spread of the step time: (max - min) / median, or None with one repeat."""
        r = self.get(system, mode, net, variant)
        st = r.get("step_seconds") if r else None
        if not isinstance(st, dict) or len(st.get("repeats", [])) < 2 or not st["median"]:
            return None
        return (st["max"] - st["min"]) / st["median"]

    def phase(self, system, mode, net, phase, variant="preset"):
        r = self.get(system, mode, net, variant)
        if not r:
            return None
        if "phases_seconds_per_step" in r:
            return r["phases_seconds_per_step"][phase]
        return r["phases_seconds_per_epoch"][phase] / max(r["steps_per_epoch"], 1)

    def comm(self, system, mode, net, variant="preset"):
        """The paper's communication time per step: total - (load + forward + backward), the residual (V-F), so
        the update and any wait are in it as they were in the paper's."""
        st = self.step(system, mode, net, variant)
        parts = [self.phase(system, mode, net, ph, variant) for ph in ("load", "forward", "backward")]
        if st is None or None in parts:
            return None
        return max(st - sum(parts), 0.0)

    def op(self, system, mode, net, kinds, variant="preset"):
        r = self.get(system, mode, net, variant)
        if not r:
            return None
        ops = r.get("operators_seconds_per_step")
        if ops is None:
            ops = {k: v / max(r["steps_per_epoch"], 1) for k, v in r["operators_seconds_per_epoch"].items()}
        present = [k for k in kinds if k in ops and ops[k] is not None]
        return sum(ops[k] for k in present) if present else None

    def memory(self, system, mode, net, variant="preset"):
        r = self.get(system, mode, net, variant)
        return max(r["peak_rss_bytes_per_rank"][:r["workers"]]) if r else None


def step_of(r):
    st = r.get("step_seconds")
    if isinstance(st, dict):
        return st["median"]
    return r["time_per_epoch_seconds"] / max(r["steps_per_epoch"], 1)


# The A/A pair: CNTK<Net>::without_one_bit is ChainerMN<Net>'s very Trainer type, so whatever separates their
# step times is the machine's noise, not a difference of systems.
AA_PAIR = (("cntk", "sync", "one_bit=off"), ("chainermn", "sync", "preset"))
MIN_FLOOR = 0.05  # never below 5%: a few repeats do not show all of a machine's moods


def noise_floor(m):
    """The relative difference two runs of one configuration may show: the larger of the A/A pair's largest
    difference over the nets and the median of the runs' repeat spreads, at least MIN_FLOOR. Returns (floor,
    how it was found)."""
    aa = []
    for n in m.nets:
        a, b = m.step(*AA_PAIR[0][:2], n, AA_PAIR[0][2]), m.step(*AA_PAIR[1][:2], n, AA_PAIR[1][2])
        if a and b:
            aa.append(max(a / b, b / a) - 1)
    spreads = [m.spread(*k[:2], k[3], k[2]) for k in m.by]
    spread = median([x for x in spreads if x is not None])
    parts = []
    if aa:
        parts.append(f"A/A pair (CNTK::without_one_bit vs ChainerMN, the same type) differs by up to "
                     f"{100 * max(aa):.1f}%")
    if spread is not None:
        parts.append(f"the median spread (max - min) / median of a run's repeats is {100 * spread:.1f}%")
    floor = max([MIN_FLOOR] + aa[:] + ([spread] if spread is not None else []))
    if not parts:
        parts.append("no A/A pair and no repeats measured")
    return floor, "; ".join(parts) + f"; floor {100 * floor:.1f}% (at least {100 * MIN_FLOOR:.0f}%)"


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


def run_steps(records):
    """The timed steps per repeat, per net: "lenet5_cifar10 200, alexnet_cifar10 50"."""
    by = {}
    for r in records:
        by.setdefault(net_id(r), set()).add(r.get("timed_steps"))
    return ", ".join(f"{n} {'/'.join(str(x) for x in sorted(v, key=str))}" for n, v in by.items())


def commits_said(records):
    """The commit the records ran at, or, when runs resumed into one directory ran at several, each with its nets."""
    by = {}
    for r in records:
        by.setdefault(r.get("commit"), set()).add(net_id(r))
    if len(by) == 1:
        return f"commit {next(iter(by))}"
    return "commits " + ", ".join(f"{c} ({', '.join(sorted(n))})" for c, n in sorted(by.items(), key=str))


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


def describe(vals, how="median"):
    """The nets' ratios summed up by their median (never a mean one outlier makes) or max, with each net's."""
    if not vals:
        return None, "n/a (not measured in this run)"
    xs = [v for _, v in vals]
    x = max(xs) if how == "max" else median(xs)
    per = ", ".join(f"{n} {v:.3g}x" for n, v in vals)
    return x, f"{x:.3g}x ({how} of {per})"


REPRODUCED = "reproduced (within 25%)"
DIRECTION = "direction only"
OPPOSITE = "opposite"
NOT_REPRODUCED = "not reproduced"
UNTESTABLE = "untestable here"
VERDICTS = (REPRODUCED, DIRECTION, OPPOSITE, NOT_REPRODUCED, UNTESTABLE)
WITHIN = 0.25  # "reproduced": the measured ratio within 25% of the paper's


def verdict(x, floor=MIN_FLOOR, paper=None, why_not="", untestable=None, same_kernel=None):
    """The verdict on a finding that says the ratio x is > 1 (by `paper` when the paper gives a figure):
    - "untestable here (why)": `untestable` says why, or `same_kernel` does (the two sides run one kernel, so
      nothing here can tell them apart: never a reproduction), or x was not measured;
    - "not reproduced": x within the noise floor (1 +- floor), i.e. no difference this machine can tell;
    - "opposite": x below 1 / (1 + floor);
    - "reproduced (within 25%)": x beyond the floor and within 25% of `paper` (x / paper in [0.75, 1.25]);
    - "direction only": x beyond the floor, but not within 25% of the paper's figure, or the paper gave none.
    why_not is said after a verdict that is not a reproduction."""
    if untestable:
        return f"{UNTESTABLE} ({untestable})"
    if same_kernel:
        return f"{UNTESTABLE} (the same kernel on both sides: {same_kernel})"
    if x is None:
        return f"{UNTESTABLE} (not measured in this run)"
    tail = f": {why_not}" if why_not else ""
    if x < 1 / (1 + floor):
        return OPPOSITE + tail
    if x <= 1 + floor:
        return f"{NOT_REPRODUCED} (within the noise floor, +-{100 * floor:.0f}%)" + tail
    if paper is not None and 1 - WITHIN <= x / paper <= 1 + WITHIN:
        return REPRODUCED
    if paper is None:
        return f"{DIRECTION} (the paper gives no figure)"
    return f"{DIRECTION} ({x / paper:.2g}x the paper's {paper:g}x)" + tail


def both(first, second):
    """The verdict of a finding with two parts, each said."""
    if first == second:
        return first
    return f"first part: {first}; second part: {second}"


def same_configuration(a, b):
    """Whether two records ran the same Trainer: then their comparison is an A/A pair, never a finding."""
    keys = ("backend", "strategy", "loader", "sharding", "mode", "net", "dataset")
    return a is not None and b is not None and all(a.get(k) == b.get(k) for k in keys)


def findings(m):
    """Every finding of the paper's abstract and section V, and its per-net rankings, V-F, V-G and Table V's own
    ratios: a dict per row. Times are per step (medians over repeats); communication is the paper's residual."""
    rows = []

    def add(fid, where, claim, paper, sinew, reproduced, swap, effect):
        rows.append({"id": fid, "where": where, "claim": claim, "paper": paper, "sinew": sinew,
                     "reproduced": reproduced, "swap": swap, "swap_effect": effect})

    def v(x, **kw):
        return verdict(x, floor=m.floor, **kw)

    def step_ratio(a, b, n, va="preset", vb="preset"):
        """a's step / b's step on net n ((system, mode) each); None for an A/A pair."""
        ra, rb = m.get(*a, n, va), m.get(*b, n, vb)
        if same_configuration(ra, rb):
            return None
        return ratio(m.step(*a, n, va), m.step(*b, n, vb))

    tf_backend_swap = "`TensorFlow<Net, Sync>::with_backend<backend::OneDnn>`"
    TF, TFA, PT, MX, MXA = ("tensorflow", "sync"), ("tensorflow", "async"), ("pytorch", "sync"), ("mxnet", "sync"), \
        ("mxnet", "async")
    res = [k for k in m.nets if k.startswith("resnet")]
    simple = [k for k in m.nets if not k.startswith("resnet")]

    def backend_effect(mode, nets=None):
        x, text = describe(over_nets(m, lambda n: step_ratio(("tensorflow", mode), ("tensorflow", mode), n,
                                                             "preset", "backend=onednn"), nets))
        return text if x is None else f"TensorFlow's step / with oneDNN's operators: {text}"

    # F1 (abstract): sync TensorFlow 2.65x slower than PyTorch.
    x, text = describe(over_nets(m, lambda n: step_ratio(TF, PT, n)))
    add("F1", "abstract, V-A", "Sync: TensorFlow is slower than PyTorch", "2.65x (mean)", text,
        v(x, paper=2.65, why_not="sinew's Eigen backend is not that much slower than its oneDNN one here"),
        tf_backend_swap, backend_effect("sync"))
    # F2 (abstract): PyTorch lags MXNet by 1.38x in sync.
    x, text = describe(over_nets(m, lambda n: step_ratio(PT, MX, n)))
    comm = describe(over_nets(m, lambda n: ratio(m.comm(*PT, n), m.comm(*MX, n))))[1]
    add("F2", "abstract, V-A", "Sync: PyTorch lags MXNet", "1.38x (mean)", text,
        v(x, paper=1.38, why_not="sinew's synchronous parameter server waits for every worker at each step as the "
                                 "ring does, and its servers share the workers' cores"),
        "the presets themselves: `MXNet<Net, Sync>` is `PyTorch<Net>::with_strategy<ParameterServer>` (and its "
        "loader options)", f"PyTorch's communication / MXNet's: {comm}")
    # F3 (abstract): async MXNet 3.22x faster than TensorFlow.
    x, text = describe(over_nets(m, lambda n: step_ratio(TFA, MXA, n)))
    add("F3", "abstract, V-A", "Async: MXNet is faster than TensorFlow", "3.22x (mean)", text,
        v(x, paper=3.22, why_not="the backends are not that far apart here, and asynchronous TensorFlow's workers "
                                 "read from memory (caching)"),
        "`TensorFlow<Net, Async>::with_backend<backend::OneDnn>`", backend_effect("async"))
    # F4 (V-A): sync TensorFlow 3.66x slower than MXNet.
    x, text = describe(over_nets(m, lambda n: step_ratio(TF, MX, n)))
    add("F4", "V-A", "Sync: TensorFlow is slower than MXNet", "3.66x (mean); 3.97x ResNet-50/CIFAR-100", text,
        v(x, paper=3.66), tf_backend_swap, backend_effect("sync"))
    # F5 (V summary, V-F): sync parameter server spends less time communicating than all-reduce (Table V: PyTorch
    # 870 / MXNet 546 = 1.59x, TensorFlow 1742 / 546 = 3.19x).
    pm = describe(over_nets(m, lambda n: ratio(m.comm(*PT, n), m.comm(*MX, n))))
    tm = describe(over_nets(m, lambda n: ratio(m.comm(*TF, n), m.comm(*MX, n))))
    add("F5", "V summary, V-F", "Sync parameter server spends less time communicating than all-reduce",
        "PyTorch / MXNet 1.59x, TensorFlow / MXNet 3.19x (Table V)",
        f"communication per step, PyTorch / MXNet: {pm[1]}; TensorFlow / MXNet: {tm[1]}",
        both(v(pm[0], paper=870 / 546, why_not="sinew's parameter server sends every gradient to a server and "
                                               "waits for the new weights, and its servers share the cores"),
             v(tm[0], paper=1742 / 546)),
        "PyTorch -> MXNet: the strategy alone (`with_strategy<ParameterServer>`)", pm[1])
    # F6 (V summary): MXNet better at communication, up to 3.19x, thanks to its RPC.
    x, text = describe(over_nets(m, lambda n: ratio(m.comm(*TFA, n), m.comm(*MXA, n))), "max")
    add("F6", "V summary, V-F", "MXNet communicates faster than TensorFlow thanks to its own RPC", "up to 3.19x",
        f"TensorFlow's async communication / MXNet's: {text}",
        v(x, untestable="the cause is the transport (gRPC against ps-lite), and every system here talks MPI "
                        "(comm::Mpi): no difference measured here can come from it"),
        "none possible: sinew has one transport (comm::Mpi)", "n/a")
    # F7 (V summary, V-G): TensorFlow loads faster thanks to caching. The median over nets, never a mean that one
    # outlier makes.
    x, text = describe(over_nets(m, lambda n: ratio(median([m.phase(*PT, n, "load"), m.phase(*MX, n, "load")]),
                                                    m.phase(*TF, n, "load"))))
    eff = describe(over_nets(m, lambda n: ratio(m.phase(*PT, n, "load"), m.phase(*PT, n, "load", "loader=cached"))))[1]
    add("F7", "V summary, V-G", "TensorFlow is superior in data loading thanks to caching",
        "qualitative (Figs. 4, 6, 8, 9)", "streaming (PyTorch, MXNet) load / TensorFlow's: " + text,
        v(x, why_not="the streaming loader's threads keep ahead of training here"),
        "`PyTorch<Net>::with_loader<data::CachedLoader>`", f"PyTorch's load / with caching: {eff}")
    # F8 (V-G): caching wins for LeNet-5 (loading is as long as a step).
    n = "lenet5_cifar10"
    share = ratio(m.phase(*PT, n, "load"), m.step(*PT, n))
    eff = step_ratio(PT, PT, n, "preset", "loader=cached")
    add("F8", "V-G", "Caching wins for LeNet-5: loading a batch is as long as training on it",
        "qualitative (Fig. 4)", "n/a" if share is None else
        f"PyTorch's step / with caching {fmt(eff)}; its load is {100 * share:.1f}% of its step",
        v(eff, why_not="the streaming loader's worker threads hide the reads"),
        "`PyTorch<LeNet5>::with_loader<data::CachedLoader>`", fmt(eff) + " (PyTorch's step / with caching)")
    # F9 (V-G): TensorFlow needs more memory (caching).
    x, text = describe(over_nets(m, lambda n: ratio(m.memory(*TF, n), m.memory(*PT, n))))
    eff = describe(over_nets(m, lambda n: ratio(m.memory(*PT, n, "loader=cached"), m.memory(*PT, n))))[1]
    add("F9", "V-G", "TensorFlow requires more memory (it caches the dataset)", "qualitative",
        "TensorFlow's peak RSS / PyTorch's: " + text, v(x), "`PyTorch<Net>::with_loader<data::CachedLoader>`",
        f"PyTorch's peak RSS with caching / without: {eff}")
    # F10 (V-G): TensorFlow uses more memory async than sync.
    x, text = describe(over_nets(m, lambda n: ratio(m.memory(*TFA, n), m.memory(*TF, n))))
    eff = describe(over_nets(m, lambda n: ratio(m.memory(*TFA, n), m.memory(*TFA, n, "sharding=disjoint"))))[1]
    add("F10", "V-G", "TensorFlow uses more memory asynchronously than synchronously", "qualitative",
        "async peak RSS / sync: " + text,
        v(x, untestable="by construction: sinew's CachedLoader holds the whole dataset on every rank in both modes "
                        "(presets/tensorflow.hpp says so), so the modes cannot differ in what they cache"),
        "`TensorFlow<Net, Async>` with `Sharding::disjoint`", f"peak RSS every-worker-reads-all / disjoint: {eff}")
    # F11 (V-B): LeNet-5, sync TensorFlow faster than async (async workers read everything, 2.9x reading).
    t = step_ratio(TFA, TF, n)
    ld = ratio(m.phase(*TFA, n, "load"), m.phase(*TF, n, "load"))
    eff = ratio(m.phase(*TFA, n, "load"), m.phase(*TFA, n, "load", "sharding=disjoint"))
    add("F11", "V-B", "LeNet-5: sync TensorFlow is faster than async, because async workers read the whole "
        "dataset", "async slower; its reading 2.9x the sync one", f"async / sync step {fmt(t)}, load {fmt(ld)}",
        both(v(t, why_not="the parameter server's servers share the workers' cores"),
             v(ld, paper=2.9, why_not="sinew's CachedLoader reads from memory in both modes, so reading everything "
                                      "costs nothing more")),
        "`TensorFlow<LeNet5, Async>` with `Sharding::disjoint`",
        f"async load every-worker-reads-all / disjoint: {fmt(eff)}")
    # F12 (V-B): LeNet-5, TensorFlow 1.56x faster than MXNet sync.
    t = step_ratio(MX, TF, n)
    add("F12", "V-B", "LeNet-5: sync TensorFlow is faster than sync MXNet (caching)", "1.56x", fmt(t),
        v(t, paper=1.56, why_not="MXNet's loader is not the slower part here"),
        "`PyTorch<LeNet5>::with_loader<data::CachedLoader>` (MXNet's loader is PyTorch's)",
        fmt(step_ratio(PT, PT, n, "preset", "loader=cached")) + " (streaming step / cached)")
    # F13 (V-B): LeNet-5, PyTorch 1.8x faster than MXNet; MXNet's tanh_backward 34.8x slower.
    t = step_ratio(MX, PT, n)
    o = ratio(m.op(*MX, n, ["tanh_backward"]), m.op(*PT, n, ["tanh_backward"]))
    add("F13", "V-B", "LeNet-5: PyTorch outperforms MXNet; MXNet's tanh_backward is slower",
        "1.8x; tanh_backward 34.8x", f"{fmt(t)}; tanh_backward {fmt(o)}",
        both(v(t, paper=1.8, why_not="the presets differ only in the strategy, and the parameter server's servers "
                                     "share the cores"),
             v(o, same_kernel="both presets run oneDNN's tanh_backward; the paper's gap is MXNet 1.7's kernel")),
        "none: the presets share the backend", "n/a")
    # F14 (V-C, V-E): TensorFlow's forward convolution is faster (1.35x AlexNet; every net but LeNet-5).
    nets = [k for k in m.nets if k != "lenet5_cifar10"] or m.nets
    x, text = describe(over_nets(m, lambda k: ratio(median([m.op(*PT, k, ["convolution"]),
                                                            m.op(*MX, k, ["convolution"])]),
                                                    m.op(*TF, k, ["convolution"])), nets))
    eff = describe(over_nets(m, lambda k: ratio(m.op(*TF, k, ["convolution"]),
                                                m.op(*TF, k, ["convolution"], "backend=onednn")), nets))[1]
    add("F14", "V-C, V-E", "TensorFlow's forward convolution is faster than oneDNN's",
        "1.35x (AlexNet, mean over the others)", "oneDNN's / Eigen's convolution: " + text +
        ("" if nets != ["lenet5_cifar10"] else " (LeNet-5 only: the paper excepts it)"),
        v(x, paper=1.35, why_not="oneDNN's convolution on this AVX-512 CPU is faster than the Eigen backend's "
                                 "(patches packed block by block, multiplied on oneDNN's sgemm)"),
        tf_backend_swap + "; `with_backend<Mix<Eigen, Use<layer_kind::conv2d, OneDnn>>>` (oneDNN's "
        "convolutions only)", f"Eigen's convolution / oneDNN's: {eff}; TensorFlow's forward / with oneDNN's "
        "convolutions only: " + describe(over_nets(m, lambda k: ratio(
            m.phase(*TF, k, "forward"), m.phase(*TF, k, "forward", "backend=mix-conv-onednn")), nets))[1])
    # F15 (V summary, V-E): TensorFlow's convolution_backward up to 7.67x slower than MXNet's.
    x, text = describe(over_nets(m, lambda k: ratio(m.op(*TF, k, CONV_BACKWARD), m.op(*MX, k, CONV_BACKWARD))),
                       "max")
    eff = describe(over_nets(m, lambda k: ratio(m.op(*TF, k, CONV_BACKWARD),
                                                m.op(*TF, k, CONV_BACKWARD, "backend=onednn"))), "max")[1]
    add("F15", "V summary, V-E", "TensorFlow's convolution_backward is slower than MXNet's", "up to 7.67x (ResNet)",
        text, v(x, paper=7.67), tf_backend_swap + "; `with_backend<Mix<Eigen, Use<layer_kind::conv2d, OneDnn>>>`",
        f"Eigen's convolution_backward / oneDNN's: {eff}; TensorFlow's backward / with oneDNN's convolutions "
        "only (their reorders included): " + describe(over_nets(m, lambda k: ratio(
            m.phase(*TF, k, "backward"), m.phase(*TF, k, "backward", "backend=mix-conv-onednn"))))[1])
    # F16 (V-C): AlexNet, TensorFlow's backward 3.32x slower than PyTorch's; fully_connected_backward 3.03x.
    k = "alexnet_cifar10"
    b = ratio(m.phase(*TF, k, "backward"), m.phase(*PT, k, "backward"))
    fc = ratio(m.op(*TF, k, FC_BACKWARD), m.op(*PT, k, FC_BACKWARD))
    add("F16", "V-C", "AlexNet: TensorFlow's backward is slower than PyTorch's (fully_connected_backward too)",
        "3.32x; fully_connected_backward 3.03x", f"{fmt(b)}; fully_connected_backward {fmt(fc)}",
        both(v(b, paper=3.32), v(fc, paper=3.03)), tf_backend_swap,
        fmt(ratio(m.phase(*TF, k, "backward"), m.phase(*TF, k, "backward", "backend=onednn"))) +
        " (TensorFlow's backward / with oneDNN's)")
    # F17 (V-C): AlexNet, MXNet's weights_update 5.1x slower than PyTorch's.
    o = ratio(m.op(*MX, k, ["weights_update"]), m.op(*PT, k, ["weights_update"]))
    add("F17", "V-C", "AlexNet: MXNet's weights_update is slower than PyTorch's", "5.1x", fmt(o),
        v(o, untestable="sinew's parameter server steps the optimizer on the servers, so a worker's "
                        "weights_update is a copy of the pulled weights, not the update the paper timed"),
        "none: both use optim::Sgd; the strategy decides where the step runs", "n/a")
    # F18 (V-C, V-F): AlexNet, MXNet's communication 1.9x faster than PyTorch's.
    c = ratio(m.comm(*PT, k), m.comm(*MX, k))
    add("F18", "V-C, V-F", "AlexNet: MXNet communicates faster than PyTorch", "1.9x", fmt(c), v(c, paper=1.9),
        "PyTorch -> MXNet: the strategy alone", fmt(c))
    # F19 (V summary, V-D): PyTorch's batch_norm 29.7x, batch_norm_backward 21.4x slower than MXNet's. The presets
    # run oneDNN's batch norm on both sides; PyTorch 1.7's CPU batch norm was its own kernel, which the
    # mix-bn-eigen swap stands in for (a batch norm that is not oneDNN's): that is what this row compares.
    bn = "backend=mix-bn-eigen"
    v1 = describe(over_nets(m, lambda k: ratio(m.op(*PT, k, ["batch_norm"], bn), m.op(*MX, k, ["batch_norm"])), res),
                  "max")
    v2 = describe(over_nets(m, lambda k: ratio(m.op(*PT, k, ["batch_norm_backward"], bn),
                                               m.op(*MX, k, ["batch_norm_backward"])), res), "max")
    same = describe(over_nets(m, lambda k: ratio(m.op(*PT, k, ["batch_norm"]), m.op(*MX, k, ["batch_norm"])), res),
                    "max")[1]
    add("F19", "V summary, V-D", "PyTorch's batch_norm and batch_norm_backward are slower than MXNet's",
        "29.7x and 21.4x (ResNet)",
        f"PyTorch with a non-oneDNN batch norm / MXNet (oneDNN): batch_norm {v1[1]}; batch_norm_backward {v2[1]}",
        v(None, untestable="no ResNet in this run") if not res else
        both(v(v1[0], paper=29.7, why_not="sinew's Eigen batch norm is not PyTorch 1.7's kernel"),
             v(v2[0], paper=21.4)),
        "`PyTorch<Net>::with_backend<backend::Mix<OneDnn, Use<BatchNorm2d, Eigen>>>`",
        f"the presets themselves (the same oneDNN kernel on both sides, so no finding): batch_norm {same}")
    # F20 (V-D): ResNet, PyTorch's forward 1.34x slower than MXNet's (its batch_norm), with the same stand-in.
    f = describe(over_nets(m, lambda k: ratio(m.phase(*PT, k, "forward", bn), m.phase(*MX, k, "forward")), res))
    add("F20", "V-D", "ResNet: PyTorch's forward pass is slower than MXNet's (batch_norm)", "1.34x",
        "PyTorch with a non-oneDNN batch norm / MXNet: " + f[1],
        v(None, untestable="no ResNet in this run") if not res else v(f[0], paper=1.34),
        "`PyTorch<Net>::with_backend<backend::Mix<OneDnn, Use<BatchNorm2d, Eigen>>>`",
        "the presets' forward (the same oneDNN operators): " + describe(over_nets(
            m, lambda k: ratio(m.phase(*PT, k, "forward"), m.phase(*MX, k, "forward")), res))[1])
    # F21 (usability paper 4.6.2): CNTK's 1-bit SGD "accelerate[s] the synchronization" (left out of its runs).
    t = describe(over_nets(m, lambda k: step_ratio(("cntk", "sync"), ("cntk", "sync"), k, "one_bit=off")))
    b = describe(over_nets(m, lambda k: ratio((m.get("cntk", "sync", k, "one_bit=off") or {}).get(
        "gradient_bytes_per_step"), (m.get("cntk", "sync", k) or {}).get("gradient_bytes_per_step"))))
    add("F21", "usability paper 4.6.2", "CNTK: 1-bit SGD accelerates the synchronization",
        "not measured (left out \"due to the limited usability\")",
        f"step without / with 1-bit SGD: {t[1]}; gradient bytes per step without / with: {b[1]}",
        v(t[0], why_not="encoding and decoding cost more than the bytes they save on this link; 1-bit SGD pays on "
                        "slow links"),
        "`CNTK<Net>::without_one_bit` (plain MPI all-reduce, ChainerMN's configuration)", b[1])

    # The findings the first reproduction left out (issue 31): per-net rankings, V-F, V-G, Table V's ratios.
    def others_over(who, against, nets):
        """The fastest of `against`'s step / who's step, per net: > 1 when `who` is the fastest."""
        def fastest(k):
            xs = [x for x in (m.step(*a, k) for a in against) if x]
            return min(xs) if xs else None
        return over_nets(m, lambda k: ratio(fastest(k), m.step(*who, k)), nets)
    x, text = describe(others_over(PT, [TF, MX], simple))
    add("R1", "V-B, V-C", "Sync: PyTorch is the fastest on the simple nets (LeNet-5, AlexNet)", "qualitative",
        "the faster of TensorFlow and MXNet / PyTorch: " + text,
        v(x) if simple else v(None, untestable="no LeNet-5 or AlexNet in this run"), "none", "n/a")
    x, text = describe(others_over(MX, [TF, PT], res))
    add("R2", "V-D", "Sync: MXNet is the fastest on the complex nets (ResNets)", "qualitative",
        "the faster of TensorFlow and PyTorch / MXNet: " + text,
        v(x) if res else v(None, untestable="no ResNet in this run"), "none", "n/a")
    s_last = ratio(m.step(*MX, n), max([x for x in (m.step(*TF, n), m.step(*PT, n)) if x] or [0]) or None)
    a_last = step_ratio(MXA, TFA, n)
    add("R3", "V-B", "LeNet-5: MXNet is the slowest, in both modes", "qualitative",
        f"sync: MXNet / the slower of TensorFlow and PyTorch {fmt(s_last)}; async: MXNet / TensorFlow {fmt(a_last)}",
        both(v(s_last), v(a_last)), "none", "n/a")
    gap_res = median([v_ for _, v_ in over_nets(m, lambda k: step_ratio(TF, MX, k), res)])
    gap_simple = median([v_ for _, v_ in over_nets(m, lambda k: step_ratio(TF, MX, k), simple)])
    add("R4", "V-D", "TensorFlow's gap (to MXNet, sync) is largest on the ResNets", "qualitative",
        f"TensorFlow / MXNet: ResNets {fmt(gap_res)} (median), LeNet-5 and AlexNet {fmt(gap_simple)}",
        v(ratio(gap_res, gap_simple)) if res and simple else
        v(None, untestable="needs a ResNet and a simple net in one run"), "none", "n/a")

    def growth(sm):
        """communication per step on the net with the most parameters / on the one with the fewest."""
        have = [(m.get(*sm, k)["parameters"], k) for k in m.nets if m.get(*sm, k) and m.get(*sm, k).get("parameters")]
        if len(have) < 2:
            return None
        lo, hi = min(have)[1], max(have)[1]
        return ratio(m.comm(*sm, hi), m.comm(*sm, lo))
    gt, gp, gm = growth(TF), growth(PT), growth(MX)
    add("V-F", "V-F", "Communication grows with the parameters for TensorFlow and PyTorch, not for MXNet",
        "qualitative", f"communication on the largest net / the smallest: TensorFlow {fmt(gt)}, PyTorch {fmt(gp)}, "
        f"MXNet {fmt(gm)}",
        v(ratio(min(gt, gp), gm) if None not in (gt, gp, gm) else None,
          why_not="sinew's parameter server moves every gradient too, so its communication grows as the ring's")
        if len(m.nets) > 1 else v(None, untestable="needs two nets of different sizes in one run"),
        "none", "n/a")
    load_share = lambda k: ratio(m.phase(*PT, k, "load"), m.step(*PT, k))
    ls_big = median([v_ for _, v_ in over_nets(m, load_share, res)])
    ls_small = load_share("lenet5_cifar10")
    add("V-G", "V-G", "Loading is hidden for the large nets (its share of a step falls with the net's work)",
        "qualitative", f"PyTorch's load share of a step: LeNet-5 {fmt(ls_small, '')}, ResNets {fmt(ls_big, '')}",
        v(ratio(ls_small, ls_big)) if res else v(None, untestable="no ResNet in this run"), "none", "n/a")
    c10 = [k for k in m.nets if k.endswith("cifar10")]
    tf_c = mean([m.comm(*TF, k) for k in c10])
    pt_c = mean([m.comm(*PT, k) for k in c10])
    tfa_c, mxa_c = mean([m.comm(*TFA, k) for k in c10]), mean([m.comm(*MXA, k) for k in c10])
    add("T5a", "Table V", "Sync: TensorFlow's communication (gRPC) takes twice PyTorch's (Gloo)",
        f"{1741.81 / 869.51:.2f}x (1741.81 / 869.51 s)", f"{fmt(ratio(tf_c, pt_c))} (residual per step, mean over "
        "the CIFAR-10 nets)",
        v(ratio(tf_c, pt_c), paper=1741.81 / 869.51,
          why_not="both are sinew's ring over MPI; only their buckets and overlap differ"),
        "none: one transport (comm::Mpi)", "n/a")
    add("T5b", "Table V", "Async: TensorFlow's communication takes longer than MXNet's",
        f"{586.65 / 410.54:.2f}x (586.65 / 410.54 s)", fmt(ratio(tfa_c, mxa_c)),
        v(ratio(tfa_c, mxa_c), paper=586.65 / 410.54), "none", "n/a")
    add("S1", "IV-A", "TensorFlow Sync: each worker reads a fixed third of the data (no reshuffle across workers)",
        "setting, not a finding", "not built",
        v(None, untestable="sinew's Sharding::disjoint reshuffles the shares every epoch and no fixed-third mode is "
                           "built; it would change which images a worker sees, not the time of a step of the same "
                           "shape, which is all this matrix compares"),
        "none", "n/a")
    return rows


TABLE5 = [("tensorflow", "sync", 1741.81), ("pytorch", "sync", 869.51), ("mxnet", "sync", 546.19),
          ("tensorflow", "async", 586.65), ("mxnet", "async", 410.54)]


def table5(m):
    """Table V: communication per epoch, the mean over the CIFAR-10 nets, per system and mode, as the paper
    defines it (total - load - forward - backward) and in its units: seconds per epoch of the paper's length
    (PAPER_STEPS_PER_EPOCH steps), from the per-step medians. Rows: (system, mode, paper s, sinew s, sinew's
    exposed comm alone s)."""
    c10 = [n for n in m.nets if n.endswith("cifar10")]
    rows = []
    for s, md, paper in TABLE5:
        resid = mean([m.comm(s, md, n) for n in c10])
        exposed = mean([m.phase(s, md, n, "comm_exposed") for n in c10])
        rows.append((s, md, paper, None if resid is None else resid * PAPER_STEPS_PER_EPOCH,
                     None if exposed is None else exposed * PAPER_STEPS_PER_EPOCH))
    return rows


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
        pl, ln, st = r0.get("placement") or {}, r0.get("link") or {}, r0.get("stack") or {}
        where = (f"{pl['hosts']} scripts/cluster hosts (network namespaces, TCP between them), link "
                 f"{ln.get('name')}" + (f" (ping-pong between h0 and h1: alpha {1e6 * ln['alpha_seconds']:.0f} us, "
                                        f"{1e-6 / ln['beta_seconds_per_byte']:.0f} MB/s)"
                                        if ln.get("alpha_seconds") is not None and ln.get("beta_seconds_per_byte")
                                        else "")
                 if pl.get("emulated") else "all ranks on one host (shared memory, not the paper's 10 Gbit/s links)")
        lines.append(f"Machine: {r0['cpu_model']}, {os.cpu_count()} cores; {st.get('os')}, {st.get('compiler')}, "
                     f"oneDNN {st.get('onednn')}, {st.get('mpi')}; {commits_said(records)}. {r0['workers']} "
                     f"workers, local batch {r0['local_batch']}, global {r0['global_batch']} (Table IV: 3 x 42); "
                     f"{where}. Binding: {r0['binding']}.")
        lines.append("")
        reps = sorted({len(r.get("repeats") or [1]) for r in records})
        lines.append(f"Per-step times: each run {'/'.join(map(str, reps))} repeat(s), interleaved; each repeat "
                     f"{r0.get('warmup_steps')} warm-up steps, then {run_steps(records)} timed steps; a run's step is "
                     "the median over its repeats of each repeat's median step (the slowest worker's). Ratios "
                     "over nets are medians. Communication is the paper's: a step less load, forward and backward.")
        lines.append("")
        lines.append(f"Noise floor: {m.floor_why}. A ratio within it is \"not reproduced\"; beyond it, "
                     "\"reproduced (within 25%)\" when within 25% of the paper's figure, else \"direction only\"; "
                     "a comparison of one kernel with itself is \"untestable here\". The machine may have been "
                     "loaded by other work: compare ratios within one run, not with another machine.")
        lines.append("")
    counts = {}
    for row in rows:
        head = next((x for x in VERDICTS if row["reproduced"].startswith(x)), "mixed (two parts)")
        counts[head] = counts.get(head, 0) + 1
    lines += ["## Findings", "", "Verdicts: " + ", ".join(f"{k} {c}" for k, c in counts.items()) + ".", "",
              "| # | where | finding | paper | sinew | reproduced | swap that isolates the cause | "
              "its measured effect |",
              "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        cells = [r["id"], r["where"], r["claim"], r["paper"], r["sinew"], r["reproduced"], r["swap"],
                 r["swap_effect"]]
        lines.append("| " + " | ".join(str(c).replace("|", "/") for c in cells) + " |")
    lines += ["", "## Table V: communication per epoch (mean over the CIFAR-10 nets)", "",
              f"Seconds per epoch of the paper's length ({PAPER_STEPS_PER_EPOCH} steps of 126 images): the "
              "paper's residual (step - load - forward - backward) and, beside it, what sinew's timers call exposed "
              "communication alone.", "",
              "| system | mode | paper (s) | sinew (s, residual) | sinew (s, exposed comm) | sinew / paper |",
              "|---|---|---|---|---|---|"]
    for s, md, paper, x, exposed in table5(m):
        lines.append(f"| {s} | {md} | {paper} | {'n/a' if x is None else f'{x:.3f}'} | "
                     f"{'n/a' if exposed is None else f'{exposed:.3f}'} | {fmt(ratio(x, paper))} |")
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
              "Milliseconds per step (medians over repeats; spread: (max - min) / median of the repeats' steps).", "",
              "| system | variant | net | mode | ranks (workers) | threads | ms/step | spread | repeats | load | fwd | "
              "bwd | comm exp. | comm hid. | update | test acc. | peak RSS (MiB, max worker) |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in records:
        p = r.get("phases_seconds_per_step") or {k: x / max(r["steps_per_epoch"], 1)
                                                 for k, x in r["phases_seconds_per_epoch"].items()}
        acc = r["accuracy"]["test"]
        sp = m.spread(r["system"], r["mode"], net_id(r), r["variant"])
        lines.append(f"| {r['system']} | {r['variant']} | {net_id(r)} | {r['mode']} | {r['ranks']} ({r['workers']}) "
                     f"| {r['threads_per_rank']} | {1e3 * step_of(r):.2f} | "
                     f"{'n/a' if sp is None else f'{100 * sp:.0f}%'} | {len(r.get('repeats') or [1])} | "
                     + " | ".join(f"{1e3 * p[k]:.2f}" for k in PHASES)
                     + f" | {'n/a' if acc is None else f'{acc:.3f}'} | "
                     f"{max(r['peak_rss_bytes_per_rank'][:r['workers']]) / 2**20:.0f} |")
    if records:
        lines += ["", f"Binding: {records[0]['binding']}."]
    if failures:
        lines += ["", "## Runs that failed", ""]
        for f in failures:
            lines.append(f"- {f['run']} repeat {f.get('repeat', 1)} (exit {f['returncode']}): "
                         f"`{f['stderr'].strip()[-300:]}`")
    with open(os.path.join(out, "REPRODUCTION.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    with open(os.path.join(out, "findings.json"), "w") as f:
        json.dump(rows, f, indent=1)
    return rows


# ----------------------------------------------------------------------------------------------------------------

def check(out, expected_runs, workers=WORKERS, repeats=None, timed=None, subset=False):
    """Checks the output's content; returns the problems (empty: all good). workers: the workers each run had
    (--hosts, or the paper's 3); repeats: the repeats each record must hold; timed: net -> the timed steps each
    repeat must have had (None: any); subset: only some runs were asked for (--only), so few findings may be
    measured."""
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
        if acc.get("test") is None and acc.get("test_samples") == 0:
            pass  # --eval-samples 0: evaluation left out (timing runs)
        elif not isinstance(acc.get("test"), (int, float)) or not 0 <= acc["test"] <= 1 or acc["test_samples"] <= 0:
            problems.append(f"{who}: held-out accuracy {acc} is not a fraction of some samples")
        if r["global_batch"] != r["local_batch"] * r["workers"] or r["workers"] != workers:
            problems.append(f"{who}: batches {r['local_batch']} x {r['workers']} != {r['global_batch']}, or not "
                            f"{workers} workers")
        if r["system"] in ("mxnet",) or (r["system"], r["mode"]) == ("tensorflow", "async"):
            if r["servers"] != workers:
                problems.append(f"{who}: {r['servers']} servers, expected {workers}")
        if r["schema"] != SCHEMA:
            problems.append(f"{who}: schema {r['schema']}, expected {SCHEMA}")
        st = r["step_seconds"]
        if repeats is not None and len(r["repeats"]) != repeats:
            problems.append(f"{who}: {len(r['repeats'])} repeats, expected {repeats}")
        if not st["median"] or st["median"] <= 0 or not st["min"] <= st["median"] <= st["max"] or \
                st["repeats"] != [x["step_seconds"] for x in r["repeats"]]:
            problems.append(f"{who}: step_seconds {st} is not the median, min and max of its repeats")
        if not r["timed_steps"] or r["timed_steps"] < 1 or any(len(x["step_seconds_each"]) != r["timed_steps"]
                                                             for x in r["repeats"]):
            problems.append(f"{who}: timed_steps {r['timed_steps']} does not match each repeat's steps")
        elif timed and r["timed_steps"] < timed.get(net_id(r), 0):
            problems.append(f"{who}: {r['timed_steps']} timed steps, {timed[net_id(r)]} asked for (an epoch too "
                            "short: more --generated-samples, or --epochs)")
        if sorted(r["phases_seconds_per_step"]) != sorted(PHASES) or r["phases_seconds_per_step"]["forward"] <= 0:
            problems.append(f"{who}: phases per step {r['phases_seconds_per_step']}")
        pl = r["placement"]
        if pl["hosts"] * pl["workers_per_host"] != r["workers"] or not pl["binding"]:
            problems.append(f"{who}: placement {pl} does not account for its {r['workers']} workers")
        if r["link"]["name"] not in LINKS or (r["ranks"] > 1 and not r["link"]["beta_seconds_per_byte"]):
            problems.append(f"{who}: link {r['link']} has no name or no measured beta")
        if r["schedule"]["kind"] is None or r["parameters"] <= 0:
            problems.append(f"{who}: schedule {r['schedule']} or parameters {r['parameters']} unknown")
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
        for needle in ("2.65x", "1.38x", "3.22x", "7.67x", "Table V", "Noise floor", "GENERATED DATA" if any(
                r["data_generated"] for r in records) else "Findings"):
            if needle not in text:
                problems.append(f"REPRODUCTION.md does not mention {needle!r}")
        for row in rows:
            if not any(v in row["reproduced"] for v in VERDICTS):
                problems.append(f"finding {row['id']}'s verdict {row['reproduced']!r} is none of {VERDICTS}")
        measured = [r for r in rows if not r["reproduced"].startswith(UNTESTABLE)]
        if len(measured) < 8 and not subset:
            problems.append(f"only {len(measured)} findings were measured, expected at least 8")
    for fig in figs.expected(Matrix([r for r in records if "net" in r and "dataset" in r]).nets):
        for ext, magic in (("png", b"\x89PNG"), ("svg", b"<svg")):
            path = os.path.join(out, "figures", f"{fig}.{ext}")
            if not os.path.exists(path) or os.path.getsize(path) < 2000:
                problems.append(f"figure {fig}.{ext} missing or nearly empty")
            elif magic not in open(path, "rb").read(4096):
                problems.append(f"figure {fig}.{ext} is not a {ext.upper()}")
    return problems


def report(out, failures, args, tail=""):
    """OUT's figures and REPRODUCTION.md over every record in OUT/runs (whichever invocations ran them)."""
    records = load_records(out)
    import figures as figs
    written = figs.draw_all(records, os.path.join(out, "figures"))
    rows = write_report(out, records, failures, written, args)
    print(f"{len(records)} records, {len(written)} figures, {len(rows)} findings: "
          f"{os.path.join(out, 'REPRODUCTION.md')}{tail}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="LeNet-5 only, 2 repeats of 2 warm-up and 6 timed steps, "
                                                         "generated data (unless --data): minutes")
    ap.add_argument("--data", help="CIFAR-10 binary directory (cifar-10-batches-bin); none: generated data")
    ap.add_argument("--data100", help="CIFAR-100 binary directory (cifar-100-binary); none: generated data of its "
                                      "shape, said loudly in the report")
    ap.add_argument("--repeats", type=int, help=f"runs of each configuration, interleaved (default {REPEATS}; "
                                                "--quick 2)")
    ap.add_argument("--warmup", type=int, help=f"steps before the timing, per repeat (default {WARMUP}; --quick 2)")
    ap.add_argument("--timed-steps", type=int, help=f"timed steps per repeat (default {TIMED_STEPS['lenet5_cifar10']} "
                                                    f"for LeNet-5, {TIMED_STEPS_DEFAULT} for the others; --quick 6)")
    ap.add_argument("--hosts", type=int, default=0, help="run on this many scripts/cluster hosts (network "
                    "namespaces; root): one worker per host, a parameter server's servers one per host beside it; "
                    "0 (default): every rank on this host, 3 workers")
    ap.add_argument("--link", default="none", choices=sorted(LINKS), help="the hosts' links with --hosts "
                                                                           "(default none: unshaped)")
    ap.add_argument("--only", help="comma-separated substrings: only the runs whose name holds one "
                                   "(e.g. pytorch-sync-preset,cntk)")
    ap.add_argument("--epochs", type=int, help="epochs of every run (default 1: --warmup + --timed-steps steps)")
    ap.add_argument("--steps", type=int, help="at most this many steps per epoch (default --warmup + --timed-steps)")
    ap.add_argument("--nets", help="comma-separated subset of " + ",".join(NETS))
    ap.add_argument("--threads", type=int, default=0, help="threads per rank (default: cores / ranks, at least 1)")
    ap.add_argument("--eval-samples", type=int, help="held-out images evaluated (default 10000; --quick 120)")
    ap.add_argument("--generated-samples", type=int, help="generated training images (default 50000; --quick 1200)")
    ap.add_argument("--out", default="paper-out", help="output directory (default paper-out)")
    ap.add_argument("--build-dir", default=os.path.join(ROOT, "build"), help="CMake build directory")
    ap.add_argument("--no-build", action="store_true", help="do not build the targets first")
    ap.add_argument("--resume", action="store_true", help="skip repeats whose record exists")
    ap.add_argument("--check", action="store_true", help="check the output's content afterwards (exit 1 if not)")
    ap.add_argument("--check-only", action="store_true", help="only check OUT (no runs)")
    ap.add_argument("--report-only", action="store_true",
                    help="no runs: redraw OUT's figures and rewrite its REPRODUCTION.md from OUT/runs (runs "
                         "resumed into one folder by several invocations, or a newer report)")
    args = ap.parse_args(argv)
    # ctest's timeout or a kill ends the matrix through SystemExit, so the cluster's hosts are removed.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    args.repeats = args.repeats or (2 if args.quick else REPEATS)
    args.warmup = args.warmup if args.warmup is not None else (2 if args.quick else WARMUP)
    args.timed_steps = args.timed_steps or (6 if args.quick else 0)
    args.eval_samples = args.eval_samples if args.eval_samples is not None else (120 if args.quick else 10000)
    # Generated data: enough images that one epoch holds the warm-up and the timed steps for every worker, also
    # asynchronous TensorFlow's (each worker an epoch's third of the whole set's batches).
    longest = args.warmup + max(timed_steps(args, n) for n in NETS)
    args.generated_samples = args.generated_samples or max(1200 if args.quick else 50000,
                                                           longest * LOCAL_BATCH * (args.hosts or WORKERS) + 1)
    if args.hosts < 0 or (args.hosts and args.hosts < 2):
        sys.exit("run_matrix: --hosts needs 2 or more hosts (0: one host, as before)")
    nets = args.nets.split(",") if args.nets else (NETS[:1] if args.quick else NETS)
    for n in nets:
        if n not in NETS:
            sys.exit(f"run_matrix: --nets: {n} is not one of {','.join(NETS)}")
    runs = plan(nets)
    if args.only:
        runs = [x for x in runs if any(o in run_name(*x) for o in args.only.split(","))]
        if not runs:
            sys.exit(f"run_matrix: --only {args.only} selects no run")
    out = os.path.abspath(args.out)
    os.makedirs(out, exist_ok=True)
    if not (args.check_only or args.report_only):
        if not args.resume:  # a fresh matrix: no record or figure of an earlier one may stay
            for sub in ("runs", "figures"):
                shutil.rmtree(os.path.join(out, sub), ignore_errors=True)
        if shutil.which("mpirun") is None:
            sys.exit("run_matrix: mpirun not found (scripts/install-deps installs Open MPI)")
        targets = sorted({target_of(s, md, n, args.hosts) for s, md, _, n in runs})
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
        commit = git_commit(out)
        started = time.time()
        if args.hosts:
            with Cluster(args.hosts, args.link) as cluster:
                failures = run_all(args, runs, args.build_dir, out, cluster.env)
        else:
            failures = run_all(args, runs, args.build_dir, out)
        merge_repeats(out, runs, args, commit)
        report(out, failures, args, f" [{time.time() - started:.0f} s of runs]")
    if args.report_only:
        if not load_records(out):
            sys.exit(f"run_matrix: --report-only: no record in {os.path.join(out, 'runs')}")
        failures = []
        if os.path.exists(os.path.join(out, "failures.json")):
            with open(os.path.join(out, "failures.json")) as f:
                failures = json.load(f)
        report(out, failures, args)
    if args.check or args.check_only:
        problems = check(out, runs, args.hosts or WORKERS, None if args.check_only else args.repeats,
                         None if args.check_only or args.steps or args.epochs else
                         {n: timed_steps(args, n) for n in nets}, subset=bool(args.only))
        for p in problems:
            print("check: " + p)
        if problems:
            sys.exit(1)
        print("check: every record, finding and figure is there")


if __name__ == "__main__":
    main()
