#!/usr/bin/python3
"""Scalability of data-parallel training (the usability paper's section 4.6, Figs. 6 and 7).

Images/s of ResNet-50 on CIFAR-10-shaped generated images, batch 128 per worker, for 1, 2, 4 and 8 workers,
synchronous all-reduce against the parameter server in sync and async mode, each next to its linear limit
(n times its own 1-worker rate); then a batch-size sweep at the largest number of workers. Each point is one
run of build/bench/scaling/scaling_images_per_second under mpirun (bench/scaling/images_per_second.cpp).

    /usr/bin/python3 bench/paper/scaling.py [--out results] [--build build] [--quick]
        [--workers 1,2,4,8] [--configs allreduce-sync,ps-sync,ps-async] [--net resnet50] [--batch 128]
        [--sweep-batches 16,32,64,128,256] [--sweep-workers N] [--warmup 3] [--steps 10]
        [--threads-per-rank T] [--bind auto|core|none] [--cores C] [--mpirun mpirun] [--mpirun-args "..."]
        [--timeout 1800]

Writes OUT/scaling.json and the figures OUT/scaling.{png,svg} (images/s against workers, dashed linear limits)
and OUT/scaling_batch.{png,svg} (images/s against the batch size).

Workers are what the paper counts: with all-reduce every rank is a worker; the parameter server adds one
serving rank (ranks = workers + 1). Threads per rank stay the same at every point, so the curve shows what
adding workers gives: by default cores // (largest number of ranks), at least 1. --bind auto binds each rank
to its own cores (mpirun --bind-to core --map-by slot:PE=T) when the largest run fits the cores, and binds
nothing otherwise. A machine with fewer cores than ranks x threads is oversubscribed: the JSON and the figure
say so, and there no configuration can approach its linear limit (2 cores cannot run 8 workers' compute in
the time of one). On a bigger machine the same command runs unchanged; --mpirun-args passes a hostfile.

scaling.json: "machine" (cpu, cores, load average at the start), "placement" (threads_per_rank, binding,
largest_run_ranks, oversubscribed), "note" (a sentence on both), "settings", "runs" (one per configuration and
number of workers: images_per_second, linear_limit, efficiency, seconds_per_step by phase, ranks, or "error"
with the run's output), "sweep" (the same per configuration and batch size), "figures", "failed_runs".

--quick: LeNet-5 for ResNet-50, 1 and 2 workers, batch 32, sweep 16 and 64, 1 warm-up and 3 timed steps: the
whole pipeline (runs, JSON, figures) in seconds, for the CI smoke test (bench/scaling/CMakeLists.txt).
"""

import argparse
import json
import os
import platform
import shlex
import signal
import subprocess
import sys
import time

CONFIGS = ["allreduce-sync", "ps-sync", "ps-async", "ps-stale2"]
# The ring with compressed gradients: time_to_accuracy.py --nets lenet5 --configs ... only (not in the defaults).
COMPRESSED = ["allreduce-fp16", "allreduce-bf16", "allreduce-onebit", "allreduce-powersgd4"]
LABELS = {"allreduce-sync": "all-reduce, sync", "ps-sync": "parameter server, sync",
          "ps-async": "parameter server, async", "ps-stale2": "parameter server, staleness 2",
          "allreduce-fp16": "all-reduce, fp16", "allreduce-bf16": "all-reduce, bf16",
          "allreduce-onebit": "all-reduce, 1-bit SGD", "allreduce-powersgd4": "all-reduce, PowerSGD 4"}
STYLE = {"allreduce-sync": ("tab:blue", "o"), "ps-sync": ("tab:orange", "s"), "ps-async": ("tab:green", "^"),
         "ps-stale2": ("tab:purple", "D"), "allreduce-fp16": ("tab:cyan", "v"), "allreduce-bf16": ("tab:olive", "<"),
         "allreduce-onebit": ("tab:red", ">"), "allreduce-powersgd4": ("tab:brown", "P")}
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def int_list(text):
    try:
        values = [int(v) for v in text.split(",") if v]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list of integers (e.g. 1,2,4,8)")
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: give at least one value, each 1 or more")
    return values


def config_list(text):
    values = [v for v in text.split(",") if v]
    unknown = [v for v in values if v not in CONFIGS + COMPRESSED]
    if unknown or not values:
        raise argparse.ArgumentTypeError(f"{','.join(unknown) or text!r} not among {','.join(CONFIGS + COMPRESSED)}")
    return values


def ranks_of(config, workers):
    """MPI ranks for `workers` workers: the parameter server's last rank serves."""
    return workers + (1 if config.startswith("ps-") else 0)


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def save_figure(fig, out_dir, stem):
    """Writes fig as OUT_DIR/STEM.png and .svg, closes it, and returns the two paths."""
    import matplotlib.pyplot as plt
    paths = [os.path.join(out_dir, f"{stem}.{ext}") for ext in ("png", "svg")]
    for path in paths:
        fig.savefig(path, dpi=120)
    plt.close(fig)
    return paths


def physical_cores():
    """Cores this process may run on, each counted once however many hardware threads it has (mpirun's
    --map-by slot:PE=T counts cores): the distinct (package, core) pairs of the allowed processors."""
    allowed = os.sched_getaffinity(0)
    cores, proc, package = set(), None, "0"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                key, value = key.strip(), value.strip()
                if key == "processor":
                    proc, package = int(value), "0"
                elif key == "physical id":
                    package = value
                elif key == "core id" and proc in allowed:
                    cores.add((package, value))
    except (OSError, ValueError):
        pass
    return len(cores) or len(allowed) or 1


def machine(cores):
    return {"cpu": cpu_model(), "cores": cores, "hostname": platform.node(),
            "load_average_at_start": os.getloadavg()[0]}


def placement(args, max_ranks):
    """Threads per rank and binding for every run, chosen once from the largest run and the cores."""
    threads = args.threads_per_rank or max(1, args.cores // max_ranks)
    bind = args.bind
    if bind == "auto":
        bind = "core" if max_ranks * threads <= args.cores else "none"
    return {"threads_per_rank": threads, "binding": bind, "largest_run_ranks": max_ranks,
            "oversubscribed": max_ranks * threads > args.cores,
            "cores_used_by_largest_run": max_ranks * threads}


def mpirun(args, ranks, place, program_args):
    """The command line of one run under mpirun, with the chosen threads and binding."""
    cmd = [args.mpirun, "-np", str(ranks), "--oversubscribe"]
    if os.geteuid() == 0:
        cmd.append("--allow-run-as-root")
    if place["binding"] == "core":
        cmd += ["--bind-to", "core", "--map-by", f"slot:PE={place['threads_per_rank']}"]
    else:
        cmd += ["--bind-to", "none"]
    cmd += ["-x", f"OMP_NUM_THREADS={place['threads_per_rank']}"]
    if place["oversubscribed"]:
        cmd += ["-x", "OMP_WAIT_POLICY=PASSIVE"]  # spinning threads would take the cores of the other ranks
    cmd += shlex.split(args.mpirun_args)
    return cmd + program_args


def run_child(cmd, timeout):
    """Runs `cmd`; returns (exit status, its output). A run past `timeout` seconds is ended, all of it."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout)
        return proc.returncode, out
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        return None, (out or "") + f"\n(ended after {timeout} s: --timeout)"


def need_matplotlib():
    """Exits 77 (a skip for ctest) with the package to install when /usr/bin/python3 has no matplotlib."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        print(f"{os.path.basename(sys.argv[0])}: the figures need matplotlib: apt-get install python3-matplotlib "
              "(scripts/install-deps installs it)", file=sys.stderr)
        sys.exit(77)


def program(args, name):
    path = args.program or os.path.join(args.build, "bench", "scaling", name)
    if not os.access(path, os.X_OK):
        sys.exit(f"{os.path.basename(sys.argv[0])}: no program {path}: build it with "
                 f"`cmake --build {args.build} --target {name}`, or give --build DIR")
    return path


def measure(args, place, exe, config, workers, batch):
    ranks = ranks_of(config, workers)
    cmd = mpirun(args, ranks, place, [exe, "--config", config, "--net", args.net, "--batch", str(batch),
                                      "--warmup", str(args.warmup), "--steps", str(args.steps),
                                      "--threads", str(place["threads_per_rank"])])
    started, load = time.time(), os.getloadavg()[0]
    status, out = run_child(cmd, args.timeout)
    record = {"config": config, "workers": workers, "ranks": ranks, "batch": batch,
              "wall_seconds_of_run": round(time.time() - started, 3), "load_average_at_start": load}
    results = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[0] == "result":
            results[parts[1]] = float(parts[2])
    if status != 0 or "images_per_second" not in results:
        record["error"] = f"exit status {status}: " + out[-2000:]
        print(f"  {config:15} {workers} workers batch {batch}: FAILED (exit status {status})\n{out[-2000:]}",
              file=sys.stderr)
        return record
    record["images_per_second"] = results["images_per_second"]
    record["timed_seconds"] = results["seconds"]
    record["seconds_per_step"] = {k: results[k] for k in
                                  ("load", "forward", "backward", "comm_exposed", "comm_hidden", "update")}
    print(f"  {config:15} {workers} workers ({ranks} ranks) batch {batch:4}: "
          f"{record['images_per_second']:9.1f} images/s", flush=True)
    return record


def add_limits(runs):
    """Each run's linear limit (workers x its configuration's 1-worker images/s) and efficiency."""
    one = {r["config"]: r["images_per_second"] for r in runs if r["workers"] == 1 and "images_per_second" in r}
    for r in runs:
        if r["config"] in one and "images_per_second" in r:
            r["linear_limit"] = r["workers"] * one[r["config"]]
            r["efficiency"] = r["images_per_second"] / r["linear_limit"]


def load_note(facts):
    """A sentence when the machine was busy as the measurements began, else nothing."""
    load = facts["load_average_at_start"]
    if load <= 0.5 * facts["cores"]:
        return ""
    return (f" The machine was busy when the runs began (load average {load:.1f} on {facts['cores']} cores): "
            "the figures are not those of an idle machine.")


def caption(settings, place, machine_facts):
    where = (f"oversubscribed: {place['largest_run_ranks']} ranks x {place['threads_per_rank']} thread(s) "
             f"on {machine_facts['cores']} cores"
             if place["oversubscribed"] else
             f"{place['threads_per_rank']} thread(s) per rank, bound to {place['binding']}, "
             f"{machine_facts['cores']} cores")
    return f"{settings['net_name']}, generated CIFAR-10-shaped images\n{where}"


def figures(doc, out_dir):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    settings, place = doc["settings"], doc["placement"]
    written = []
    # Fig. 7: images/s against workers, one line per configuration, its linear limit dashed in its colour
    # (the paper draws them grey; with several configurations the colour tells which limit is whose).
    fig, ax = plt.subplots(figsize=(7.2, 4.8))
    for config in settings["configs"]:
        pts = sorted((r["workers"], r["images_per_second"], r.get("linear_limit"))
                     for r in doc["runs"] if r["config"] == config and "images_per_second" in r)
        if not pts:
            continue
        color, marker = STYLE[config]
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker=marker, color=color, label=LABELS[config])
        limit = [(p[0], p[2]) for p in pts if p[2] is not None]
        if limit:
            ax.plot([p[0] for p in limit], [p[1] for p in limit], color=color, linewidth=1.2, alpha=0.5,
                    linestyle="--", zorder=1)
    ax.plot([], [], color="grey", linewidth=1.2, linestyle="--", label="linear limits (n x 1-worker rate)")
    ax.set_xscale("log", base=2)
    ax.set_xticks(settings["workers"])
    ax.set_xticklabels([str(w) for w in settings["workers"]])
    ax.set_xlabel("workers")
    ax.set_ylabel("training images/s (all workers)")
    ax.set_title(f"Scalability, batch {settings['batch']} per worker\n{caption(settings, place, doc['machine'])}",
                 fontsize=9)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    written += save_figure(fig, out_dir, "scaling")

    # Fig. 6: images/s against the batch size at the sweep's number of workers, bars per configuration.
    fig, ax = plt.subplots(figsize=(7.2, 4.8))
    batches = settings["sweep_batches"]
    configs = settings["configs"]
    width = 0.8 / max(1, len(configs))
    for i, config in enumerate(configs):
        by_batch = {r["batch"]: r["images_per_second"] for r in doc["sweep"]
                    if r["config"] == config and "images_per_second" in r}
        xs = [j + (i - (len(configs) - 1) / 2) * width for j, b in enumerate(batches) if b in by_batch]
        ys = [by_batch[b] for b in batches if b in by_batch]
        ax.bar(xs, ys, width=width, color=STYLE[config][0], label=LABELS[config])
    ax.set_xticks(range(len(batches)))
    ax.set_xticklabels([str(b) for b in batches])
    ax.set_xlabel("batch size per worker")
    ax.set_ylabel("training images/s (all workers)")
    ax.set_title(f"Batch size at {settings['sweep_workers']} workers\n"
                 f"{caption(settings, place, doc['machine'])}", fontsize=9)
    ax.grid(True, axis="y", alpha=0.3)
    ax.set_ylim(0, ax.get_ylim()[1] * 1.25)  # room for the legend above the bars
    ax.legend(fontsize=8, ncol=2, loc="upper left")
    fig.tight_layout()
    written += save_figure(fig, out_dir, "scaling_batch")
    return written


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", default="results", help="folder of scaling.json and the figures (default: results)")
    p.add_argument("--build", default=os.path.join(ROOT, "build"), help="the CMake build folder")
    p.add_argument("--program", help="the scaling_images_per_second program (default: in --build)")
    p.add_argument("--quick", action="store_true", help="LeNet-5, 1-2 workers, a few steps: seconds (CI)")
    p.add_argument("--workers", type=int_list, help="numbers of workers (default 1,2,4,8)")
    p.add_argument("--configs", type=config_list, default=["allreduce-sync", "ps-sync", "ps-async"],
                   help="comma-separated among " + ",".join(CONFIGS))
    p.add_argument("--net", choices=["resnet50", "lenet5"], help="default resnet50")
    p.add_argument("--batch", type=int, help="batch per worker (default 128)")
    p.add_argument("--sweep-batches", type=int_list, help="batch sizes of the sweep (default 16,32,64,128,256)")
    p.add_argument("--sweep-workers", type=int, help="workers of the sweep (default: the most in --workers)")
    p.add_argument("--warmup", type=int, help="untimed steps per run (default 3)")
    p.add_argument("--steps", type=int, help="timed steps per run (default 10)")
    p.add_argument("--threads-per-rank", type=int, default=0, help="default: cores // largest ranks, >= 1")
    p.add_argument("--bind", choices=["auto", "core", "none"], default="auto", help="mpirun binding (default auto)")
    p.add_argument("--cores", type=int, default=physical_cores(),
                   help="cores to plan for (default: the physical cores this process may use)")
    p.add_argument("--mpirun", default="mpirun", help="Open MPI's mpirun (default: the one on PATH)")
    p.add_argument("--mpirun-args", default="", help="more mpirun options, e.g. \"--hostfile hosts\"")
    p.add_argument("--timeout", type=int, default=1800, help="seconds one run may take (default 1800)")
    args = p.parse_args()
    quick = args.quick
    args.workers = args.workers or ([1, 2] if quick else [1, 2, 4, 8])
    args.net = args.net or ("lenet5" if quick else "resnet50")
    args.batch = args.batch or (32 if quick else 128)
    args.sweep_batches = args.sweep_batches or ([16, 64] if quick else [16, 32, 64, 128, 256])
    args.sweep_workers = args.sweep_workers or max(args.workers)
    args.warmup = args.warmup if args.warmup is not None else (1 if quick else 3)
    args.steps = args.steps or (3 if quick else 10)
    if args.threads_per_rank < 0 or args.cores < 1 or args.warmup < 0 or args.steps < 1 or args.sweep_workers < 1:
        p.error("--threads-per-rank >= 0, --cores >= 1, --warmup >= 0, --steps >= 1, --sweep-workers >= 1")
    need_matplotlib()
    exe = program(args, "scaling_images_per_second")
    os.makedirs(args.out, exist_ok=True)

    max_ranks = max(ranks_of(c, w) for c in args.configs for w in args.workers + [args.sweep_workers])
    place = placement(args, max_ranks)
    facts = machine(args.cores)
    net_name = {"resnet50": "ResNet-50 (ImageNet stem, 3x32x32, 23.5M parameters)",
                "lenet5": "LeNet-5 (3x32x32; --quick stands in for ResNet-50)"}[args.net]
    settings = {"net": args.net, "net_name": net_name, "batch": args.batch, "workers": args.workers,
                "configs": args.configs, "sweep_batches": args.sweep_batches, "sweep_workers": args.sweep_workers,
                "warmup_steps": args.warmup, "timed_steps": args.steps, "quick": quick,
                "data": "generated CIFAR-10-shaped images (3x32x32 uint8, 10 classes)",
                "optimizer": "SGD lr 0.01 momentum 0.9", "backend": "onednn",
                "mpirun_args": args.mpirun_args}
    print(f"scaling: {net_name}, batch {args.batch}, workers {args.workers}, configurations {args.configs}; "
          f"{place['threads_per_rank']} thread(s) per rank, binding {place['binding']}"
          + (f", OVERSUBSCRIBED ({max_ranks} ranks x {place['threads_per_rank']} on {args.cores} cores)"
             if place["oversubscribed"] else ""), flush=True)

    runs = [measure(args, place, exe, c, w, args.batch) for c in args.configs for w in args.workers]
    add_limits(runs)
    sweep = []
    for c in args.configs:
        for b in args.sweep_batches:
            same = [r for r in runs if r["config"] == c and r["workers"] == args.sweep_workers and r["batch"] == b]
            sweep.append(dict(same[0]) if same else measure(args, place, exe, c, args.sweep_workers, b))
    note = ("Oversubscribed: the largest run has more ranks x threads than the machine has cores, so the ranks "
            "share cores and no configuration can approach its linear limit; the figures show the pipeline and "
            "the relative cost of the configurations, not scalability.") if place["oversubscribed"] else \
        "Every rank has its own cores."
    note += load_note(facts)
    doc = {"benchmark": "scaling", "paper": "usability-distributed-dl-2018 section 4.6, Figs. 6-7",
           "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "machine": facts,
           "placement": place, "note": note, "settings": settings, "runs": runs, "sweep": sweep}
    doc["figures"] = [os.path.basename(f) for f in figures(doc, args.out)]
    failed = [r for r in runs + sweep if "error" in r]
    doc["failed_runs"] = len(failed)
    with open(os.path.join(args.out, "scaling.json"), "w") as f:
        json.dump(doc, f, indent=2)
    print(f"scaling: wrote {os.path.join(args.out, 'scaling.json')} and {', '.join(doc['figures'])}"
          + (f"; {len(failed)} run(s) FAILED (their records hold the output)" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
