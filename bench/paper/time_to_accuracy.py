#!/usr/bin/python3
"""Time to accuracy: held-out accuracy against training wall time (the usability paper's section 4.7).

Synchronous all-reduce, the parameter server in sync and async mode and with bounded staleness (2), each with
3 workers, train LeNet-5 and ResNet-18 (CIFAR stem) on real CIFAR-10; after every epoch rank 0 evaluates the
held-out test_batch.bin. One figure (a panel per net, a line per configuration) and a summary of which
configuration first reaches 55% (LeNet-5) / 75% (ResNet-18), or that none did within the budget. Each curve is
one run of build/bench/scaling/scaling_time_to_accuracy under mpirun (bench/scaling/time_to_accuracy.cpp).

    /usr/bin/python3 bench/paper/time_to_accuracy.py --data DIR [--out results] [--build build]
        [--nets lenet5,resnet18] [--configs allreduce-sync,ps-sync,ps-async,ps-stale2] [--workers 3]
        [--budget S] [--max-epochs 30] [--batch 42] [--lr-lenet5 0.05] [--lr-resnet18 0.05]
        [--async-lr scaled|same] [--held-out auto|test_batch|data_batch_5] [--eval-images 0]
        [--threads-per-rank T] [--bind auto|core|none] [--cores C] [--mpirun mpirun] [--mpirun-args "..."]
    /usr/bin/python3 bench/paper/time_to_accuracy.py --quick [--out DIR]      (generated data, seconds: CI)

--configs also takes the ring with compressed gradients, for LeNet-5 (issue 14's accuracy comparison: the same
epochs with and without compression): allreduce-fp16, allreduce-bf16, allreduce-onebit, allreduce-powersgd4.

DIR is cifar-10-batches-bin: data_batch_1..5.bin train (each worker a disjoint shard), test_batch.bin is held
out; where DIR has no test_batch.bin (../shared/data's copy lacks it), --held-out auto holds out
data_batch_5.bin and trains on batches 1-4, as examples/train_cifar10 does, and the JSON says so.

Training seconds are rank 0's wall time inside its epochs: the evaluations are left out, and every
configuration is timed alike. A run stops after the epoch in which its training time passes the budget
(--budget; default 600 s for LeNet-5, 3600 s for ResNet-18) or after --max-epochs. The parameter server's
async and stale runs apply each worker's gradient on its own: by default (--async-lr scaled) with the
learning rate / workers, the step per image of the sync runs, which average the workers' gradients (with the
sync rate, LeNet-5 diverges within 2 epochs on --quick's data: 3 momentum steps per global batch).

--generate N (and --quick, which also means LeNet-5 only, batch 16, 2 epochs) writes N learnable generated
images in CIFAR-10's binary format (each class a fixed random pattern, mixed 1 to 3 with noise) into
OUT/generated-cifar10 and trains on them: the JSON says "generated" loudly, and its accuracies say nothing
about CIFAR-10.

Writes OUT/time_to_accuracy.json and OUT/time_to_accuracy.{png,svg}. The JSON: "machine", "placement", "note",
"data" (path, generated or not, the held-out file), "settings", "runs" (per net and configuration: lr,
points [{epoch, seconds, accuracy, loss, train_loss, eval_seconds}], target, time_to_target, epoch_at_target,
best_accuracy, or "error"), "summary" (per net: first, seconds, ranking, sentence), "figures", "failed_runs".
Placement (threads per rank, binding, oversubscription) is chosen as bench/paper/scaling.py chooses it, from
the largest run and the cores.
"""

import argparse
import json
import os
import random
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import scaling  # noqa: E402  (the same mpirun placement, child runs and machine facts)

TARGETS = {"lenet5": 0.55, "resnet18": 0.75}
NET_NAMES = {"lenet5": "LeNet-5", "resnet18": "ResNet-18 (CIFAR stem)"}
BUDGETS = {"lenet5": 600, "resnet18": 3600}
TRAIN_FILES = [f"data_batch_{i}.bin" for i in range(1, 6)]


def generate(folder, images, seed=11):
    """Writes `images` training records (over five files) and images // 4 held-out ones in CIFAR-10's binary
    format: label byte then 3072 pixel bytes; each class is a fixed random pattern, mixed 1 to 3 with uniform
    noise."""
    os.makedirs(folder, exist_ok=True)
    rng = random.Random(seed)
    patterns = [bytes(rng.randrange(256) for _ in range(3072)) for _ in range(10)]

    def records(n, file_rng):
        out = bytearray()
        for _ in range(n):
            label = file_rng.randrange(10)
            noise = file_rng.randbytes(3072)
            out.append(label)
            out += bytes((p + 3 * q) // 4 for p, q in zip(patterns[label], noise))
        return bytes(out)

    per_file = max(1, images // len(TRAIN_FILES))
    for i, name in enumerate(TRAIN_FILES):
        with open(os.path.join(folder, name), "wb") as f:
            f.write(records(per_file, random.Random(seed + 1 + i)))
    with open(os.path.join(folder, "test_batch.bin"), "wb") as f:
        f.write(records(max(10, images // 4), random.Random(seed + 99)))
    return folder


def curve(args, place, exe, net, config):
    ranks = scaling.ranks_of(config, args.workers)
    lr = args.lr_lenet5 if net == "lenet5" else args.lr_resnet18
    if config in ("ps-async", "ps-stale2") and args.async_lr == "scaled":
        lr /= args.workers  # each update is one worker's batch: the same step per image as the averaged sync one
    budget = args.budget if args.budget is not None else BUDGETS[net]
    cmd = scaling.mpirun(args, ranks, place,
                         [exe, "--data", args.data, "--config", config, "--net", net, "--batch", str(args.batch),
                          "--lr", str(lr), "--budget", str(budget), "--max-epochs", str(args.max_epochs),
                          "--eval-images", str(args.eval_images), "--held-out", args.held_out + ".bin",
                          "--threads", str(place["threads_per_rank"])])
    started, load = time.time(), os.getloadavg()[0]
    status, out = scaling.run_child(cmd, args.timeout)
    points = [json.loads(line.split(" ", 1)[1]) for line in out.splitlines() if line.startswith("point {")]
    record = {"net": net, "config": config, "workers": args.workers, "ranks": ranks, "lr": lr,
              "budget_seconds": budget, "points": points, "wall_seconds_of_run": round(time.time() - started, 1),
              "load_average_at_start": load}
    target = TARGETS[net]
    reached = [p for p in points if p["accuracy"] >= target]
    record["target"] = target
    record["time_to_target"] = reached[0]["seconds"] if reached else None
    record["epoch_at_target"] = reached[0]["epoch"] if reached else None
    record["best_accuracy"] = max((p["accuracy"] for p in points), default=None)
    if status != 0 or len(points) < 2:
        record["error"] = f"exit status {status}: " + out[-2000:]
        print(f"  {net} {config}: FAILED (exit status {status})\n{out[-2000:]}", file=sys.stderr)
    else:
        last = points[-1]
        print(f"  {net:8} {config:15} {len(points) - 1:3} epochs in {last['seconds']:7.1f} s: held-out "
              f"{100 * last['accuracy']:5.1f}% (best {100 * record['best_accuracy']:5.1f}%), "
              + (f"{100 * target:.0f}% at {record['time_to_target']:.1f} s" if reached
                 else f"{100 * target:.0f}% not reached"), flush=True)
    return record


def summarize(net, records):
    """Which configuration reached the net's target first, as data and as a sentence."""
    target = TARGETS[net]
    done = [r for r in records if r["net"] == net and r["time_to_target"] is not None]
    ran = [r for r in records if r["net"] == net and r["points"]]
    s = {"net": net, "target": target, "first": None, "seconds": None,
         "ranking": [{"config": r["config"], "seconds": r["time_to_target"], "epoch": r["epoch_at_target"]}
                     for r in sorted(done, key=lambda r: r["time_to_target"])]}
    if done:
        best = min(done, key=lambda r: r["time_to_target"])
        s["first"], s["seconds"] = best["config"], best["time_to_target"]
        parts = [f"{NET_NAMES[net]}: {scaling.LABELS[best['config']]} reached {100 * target:.0f}% first, after "
                 f"{best['time_to_target']:.1f} s of training (epoch {best['epoch_at_target']})"]
        parts += [f"{scaling.LABELS[r['config']]} after {r['time_to_target']:.1f} s"
                  for r in sorted(done, key=lambda r: r["time_to_target"])[1:]]
        missed = [r for r in ran if r["time_to_target"] is None]
        if missed:
            parts.append("not reached within the budget by " + ", ".join(
                f"{scaling.LABELS[r['config']]} (best {100 * r['best_accuracy']:.1f}%)" for r in missed))
        s["sentence"] = "; ".join(parts)
    elif ran:
        best = max(ran, key=lambda r: r["best_accuracy"])
        s["sentence"] = (f"{NET_NAMES[net]}: no configuration reached {100 * target:.0f}% within its budget "
                         f"(best: {scaling.LABELS[best['config']]} at {100 * best['best_accuracy']:.1f}%)")
    else:
        s["sentence"] = f"{NET_NAMES[net]}: no run finished"
    return s


def figure(doc, out_dir):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    nets = doc["settings"]["nets"]
    fig, axes = plt.subplots(1, len(nets), figsize=(6.4 * len(nets), 4.8), squeeze=False)
    for ax, net in zip(axes[0], nets):
        for r in doc["runs"]:
            if r["net"] != net or not r["points"]:
                continue
            color, marker = scaling.STYLE[r["config"]]
            ax.plot([p["seconds"] for p in r["points"]], [100 * p["accuracy"] for p in r["points"]],
                    color=color, marker=marker, markersize=4, label=scaling.LABELS[r["config"]])
            if r["time_to_target"] is not None:
                ax.axvline(r["time_to_target"], color=color, linestyle=":", linewidth=1)
        ax.axhline(100 * TARGETS[net], color="grey", linestyle="--", linewidth=1,
                   label=f"target {100 * TARGETS[net]:.0f}%")
        ax.set_xlabel("training wall time (s), evaluation left out")
        ax.set_ylabel("held-out accuracy (%)")
        ax.set_title(f"{NET_NAMES[net]}, {doc['settings']['workers']} workers", fontsize=10)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8, loc="lower right")
    place, facts = doc["placement"], doc["machine"]
    data = ("GENERATED data (not CIFAR-10)" if doc["data"]["generated"] else
            f"CIFAR-10 ({doc['data']['held_out']} held out)")
    where = (f"oversubscribed: {place['largest_run_ranks']} ranks x {place['threads_per_rank']} thread(s) on "
             f"{facts['cores']} cores" if place["oversubscribed"] else
             f"{place['threads_per_rank']} thread(s) per rank, bound to {place['binding']}, {facts['cores']} cores")
    fig.suptitle(f"Time to accuracy, {data}, local batch {doc['settings']['batch']}\n{where}", fontsize=9)
    fig.tight_layout()
    written = []
    written += scaling.save_figure(fig, out_dir, "time_to_accuracy")
    return written


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", help="cifar-10-batches-bin (data_batch_1..5.bin, test_batch.bin)")
    p.add_argument("--generate", type=int, default=0, metavar="N",
                   help="train on N generated learnable images instead (CI; says nothing about CIFAR-10)")
    p.add_argument("--quick", action="store_true", help="generated data, LeNet-5, 2 epochs: seconds (CI)")
    p.add_argument("--out", default="results", help="folder of time_to_accuracy.json and the figure")
    p.add_argument("--build", default=os.path.join(scaling.ROOT, "build"), help="the CMake build folder")
    p.add_argument("--program", help="the scaling_time_to_accuracy program (default: in --build)")
    p.add_argument("--nets", default=None, help="comma-separated among lenet5,resnet18 (default both)")
    p.add_argument("--configs", type=scaling.config_list, default=list(scaling.CONFIGS),
                   help="comma-separated among " + ",".join(scaling.CONFIGS))
    p.add_argument("--workers", type=int, default=3, help="workers of every run (default 3)")
    p.add_argument("--budget", type=float, help="training seconds per run (default 600 LeNet-5, 3600 ResNet-18)")
    p.add_argument("--max-epochs", type=int, help="epochs at most per run (default 30)")
    p.add_argument("--batch", type=int, help="batch per worker (default 42: Table IV's 126 over 3 workers)")
    p.add_argument("--lr-lenet5", type=float, default=0.05, help="SGD learning rate, momentum 0.9 (default 0.05)")
    p.add_argument("--lr-resnet18", type=float, default=0.05, help="(default 0.05)")
    p.add_argument("--held-out", choices=["auto", "test_batch", "data_batch_5"], default="auto",
                   help="the held-out file; auto: test_batch.bin where DIR has it, else data_batch_5.bin")
    p.add_argument("--async-lr", choices=["scaled", "same"], default="scaled",
                   help="scaled (default): async and stale runs use lr / workers, as each of their updates is "
                        "one worker's batch; same: the sync learning rate")
    p.add_argument("--eval-images", type=int, default=0, help="held-out images evaluated, the first N (0: all)")
    p.add_argument("--threads-per-rank", type=int, default=0, help="default: cores // largest ranks, >= 1")
    p.add_argument("--bind", choices=["auto", "core", "none"], default="auto", help="mpirun binding (default auto)")
    p.add_argument("--cores", type=int, default=scaling.physical_cores(),
                   help="cores to plan for (default: the physical cores this process may use)")
    p.add_argument("--mpirun", default="mpirun", help="Open MPI's mpirun (default: the one on PATH)")
    p.add_argument("--mpirun-args", default="", help="more mpirun options, e.g. \"--hostfile hosts\"")
    p.add_argument("--timeout", type=int, default=4 * 3600, help="seconds one run may take (default 4 h)")
    args = p.parse_args()
    nets = (args.nets or ("lenet5" if args.quick else "lenet5,resnet18")).split(",")
    if any(n not in TARGETS for n in nets):
        p.error(f"--nets {args.nets}: each among lenet5,resnet18")
    if args.quick and not args.data and not args.generate:
        args.generate = 1500
    if bool(args.data) == bool(args.generate):
        p.error("give --data DIR (CIFAR-10's binary files) or --generate N (or --quick), one of them")
    args.batch = args.batch or (16 if args.quick else 42)
    args.max_epochs = args.max_epochs or (2 if args.quick else 30)
    if args.workers < 1 or args.batch < 1 or args.max_epochs < 1 or args.eval_images < 0 or args.cores < 1:
        p.error("--workers, --batch, --max-epochs and --cores are 1 or more, --eval-images 0 or more")
    scaling.need_matplotlib()
    os.makedirs(args.out, exist_ok=True)
    if args.generate:
        args.held_out = "test_batch"
        args.data = generate(os.path.join(args.out, "generated-cifar10"), args.generate)
    else:
        if args.held_out == "auto":
            has_test = os.path.isfile(os.path.join(args.data, "test_batch.bin"))
            args.held_out = "test_batch" if has_test else "data_batch_5"
        needed = TRAIN_FILES + (["test_batch.bin"] if args.held_out == "test_batch" else [])
        missing = [f for f in needed if not os.path.isfile(os.path.join(args.data, f))]
        if missing:
            p.error(f"--data {args.data} lacks {', '.join(missing)}: give the cifar-10-batches-bin folder "
                    "(CIFAR-10's binary version)")
    exe = scaling.program(args, "scaling_time_to_accuracy")
    max_ranks = max(scaling.ranks_of(c, args.workers) for c in args.configs)
    place = scaling.placement(args, max_ranks)
    facts = scaling.machine(args.cores)
    print(f"time_to_accuracy: {', '.join(NET_NAMES[n] for n in nets)}; {args.workers} workers; "
          f"{'GENERATED data' if args.generate else args.data}; {place['threads_per_rank']} thread(s) per rank, "
          f"binding {place['binding']}" + (" (OVERSUBSCRIBED)" if place["oversubscribed"] else ""), flush=True)
    runs = [curve(args, place, exe, net, config) for net in nets for config in args.configs]
    doc = {"benchmark": "time_to_accuracy", "paper": "usability-distributed-dl-2018 section 4.7",
           "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "machine": facts, "placement": place,
           "note": ("Oversubscribed: more ranks x threads than cores, so the ranks share cores."
                    if place["oversubscribed"] else "Every rank has its own cores.") + scaling.load_note(facts),
           "data": {"path": os.path.abspath(args.data), "generated": bool(args.generate),
                    "note": ("GENERATED learnable images in CIFAR-10's format: the accuracies test the pipeline "
                             "and say nothing about CIFAR-10") if args.generate else
                    "CIFAR-10: data_batch_1..5 train, test_batch held out" if args.held_out == "test_batch" else
                    "CIFAR-10: data_batch_1..4 train, data_batch_5 held out (no test_batch.bin in the folder)",
                    "held_out": args.held_out + ".bin"},
           "settings": {"nets": nets, "configs": args.configs, "workers": args.workers, "batch": args.batch,
                        "global_batch": args.batch * args.workers, "max_epochs": args.max_epochs,
                        "eval_images": args.eval_images or "all", "targets": TARGETS, "quick": args.quick,
                        "optimizer": "SGD momentum 0.9, constant learning rate", "backend": "onednn",
                        "async_lr": ("learning rate / workers for ps-async and ps-stale2 (each update is one "
                                     "worker's batch)") if args.async_lr == "scaled" else "the sync learning rate",
                        "clock": "rank 0's wall time inside its epochs (evaluation left out)"},
           "runs": runs}
    doc["summary"] = [summarize(net, runs) for net in nets]
    doc["figures"] = [os.path.basename(f) for f in figure(doc, args.out)]
    failed = [r for r in runs if "error" in r]
    doc["failed_runs"] = len(failed)
    with open(os.path.join(args.out, "time_to_accuracy.json"), "w") as f:
        json.dump(doc, f, indent=2)
    for s in doc["summary"]:
        print(s["sentence"])
    print(f"time_to_accuracy: wrote {os.path.join(args.out, 'time_to_accuracy.json')} and "
          f"{', '.join(doc['figures'])}" + (f"; {len(failed)} run(s) FAILED" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
