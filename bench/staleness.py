#!/usr/bin/env python3
"""bench/staleness.py: the parameter server's sync modes on one small problem, for accuracy (bench/staleness.cpp).

Runs every mode (Sync, Async, BoundedStaleness<K> for K = 0, 1, 2, 4, 8) at momentum 0 and 0.9 (and, with
--staleness-lr, also with the learning rate divided by staleness + 1), for --seeds seeds, 2 workers + 1 server
(mpirun -np 3), worker 0 slowed by --slow-ms per step; prints the median and range of held-out accuracy per row
with the mean staleness of the applied gradients, and writes every run's JSON row to --json.

  bench/staleness.py [--build build] [--seeds 3] [--slow-ms 4] [--signal 0.4] [--staleness-lr] [--json FILE]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

MODES = ["sync", "stale0", "stale1", "stale2", "stale4", "stale8", "async"]


def run(build, mode, momentum, seed, args, scaled):
    cmd = ["mpirun", "--oversubscribe", "-np", "3", os.path.join(build, "bench", "staleness"), "--mode", mode,
           "--momentum", str(momentum), "--seed", str(seed), "--slow-ms", str(args.slow_ms), "--signal",
           str(args.signal), "--epochs", str(args.epochs), "--lr", str(args.lr)]
    if scaled:
        cmd.append("--staleness-lr")
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", OMP_NUM_THREADS="1")
    for attempt in range(2):  # once more if it failed: a signal from outside the job should not end the sweep
        out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
        rows = [line for line in out.stdout.splitlines() if line.startswith("{")]
        if out.returncode == 0 and rows:
            return json.loads(rows[-1])
        print(f"staleness.py: {' '.join(cmd)} failed ({out.returncode}):\n{out.stdout}\n{out.stderr}", file=sys.stderr)
    sys.exit("staleness.py: a run failed twice")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", default="build")
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--slow-ms", type=int, default=4)
    p.add_argument("--signal", type=float, default=0.4)
    p.add_argument("--epochs", type=int, default=6)
    p.add_argument("--lr", type=float, default=0.02)
    p.add_argument("--momenta", default="0,0.9")
    p.add_argument("--modes", default=",".join(MODES))
    p.add_argument("--staleness-lr", action="store_true", help="also run each asynchronous mode with lr / (staleness + 1)")
    p.add_argument("--json", default="")
    args = p.parse_args()
    rows = []
    variants = [(float(m), False) for m in args.momenta.split(",")]
    if args.staleness_lr:
        variants += [(float(m), True) for m in args.momenta.split(",")]
    # Interleaved: every configuration once per seed before the next seed, so that drift in the machine's load
    # spreads over all of them.
    for seed in range(1, args.seeds + 1):
        for momentum, scaled in variants:
            for mode in args.modes.split(","):
                if scaled and mode == "sync":
                    continue
                rows.append(run(args.build, mode, momentum, seed, args, scaled))
                if args.json:  # after every run, so that a sweep cut short keeps what it measured
                    with open(args.json, "w") as f:
                        json.dump(rows, f, indent=1)
    print(f"| mode | momentum | lr / (staleness + 1) | accuracy, median of {args.seeds} | range | mean staleness | "
          "largest lead | replies held |")
    print("|---|---|---|---|---|---|---|---|")
    for momentum, scaled in variants:
        for mode in args.modes.split(","):
            mine = [r for r in rows if r["mode"] == mode and r["momentum"] == momentum and r["staleness_lr"] == scaled]
            if not mine:
                continue
            acc = [100 * r["accuracy"] for r in mine]
            print(f"| {mode} | {momentum:g} | {'yes' if scaled else 'no'} | {statistics.median(acc):.1f}% | "
                  f"{min(acc):.1f}-{max(acc):.1f} | {statistics.mean(r['mean_staleness'] for r in mine):.2f} | "
                  f"{max(r['max_lead'] for r in mine)} | {statistics.median(r['held_replies'] for r in mine):.0f} |")


if __name__ == "__main__":
    main()
