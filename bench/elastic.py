#!/usr/bin/python3
"""Training on after a rank dies, for accuracy and recovery time: bench/elastic (LeNet-5 on Fashion-MNIST) with
3 ranks of which rank 2 is killed mid-run (options.elastic, `mpirun --with-ft ulfm`) next to the same run on the
2 survivors alone, for the ring, MPI's all-reduce and the parameter server (Sync; 3 -> 2 workers beside one
server), over seeds, interleaved. Needs Open MPI 5 with ULFM
(Debian 13). Prints the table and writes every row to --json.

  /usr/bin/python3 bench/elastic.py [--build build] [--seeds 1,2,3] [--epochs 2] [--kill-step 468] [--json out.json]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def run(args, strategy, seed, elastic):
    ranks = (3 if elastic else 2) + (1 if strategy == "ps" else 0)  # ps: and its server
    cmd = ["mpirun", "--oversubscribe", "--bind-to", "none", "-np", str(ranks)]
    if elastic:
        cmd[1:1] = ["--with-ft", "ulfm"]
    if os.geteuid() == 0:
        cmd.insert(1, "--allow-run-as-root")
    cmd += [os.path.join(args.build, "bench", "elastic"), "--strategy", strategy, "--seed", str(seed),
            "--epochs", str(args.epochs)]
    if elastic:
        cmd += ["--kill-rank", "2", "--kill-step", str(args.kill_step)]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=args.timeout)
    rows = [json.loads(line) for line in p.stdout.splitlines() if line.startswith("{")]
    if not rows:
        sys.stderr.write(f"elastic.py: {' '.join(cmd)} gave no row (exit {p.returncode}):\n{p.stderr[-2000:]}\n")
        return None
    row = rows[0]
    row["mode"] = "elastic 3 -> 2" if elastic else "2 ranks throughout"
    print(json.dumps(row), flush=True)
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--seeds", default="1,2,3")
    ap.add_argument("--strategies", default="ring,mpi,ps", help="ps: Sync, one server beside the workers")
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--kill-step", type=int, default=468, help="steps before rank 2 dies (468: epoch 1's middle "
                    "on 3 ranks at batch 64)")
    ap.add_argument("--timeout", type=int, default=1200)
    ap.add_argument("--json")
    args = ap.parse_args()
    rows = []
    for seed in [int(s) for s in args.seeds.split(",")]:
        for strategy in args.strategies.split(","):
            for elastic in (True, False):
                row = run(args, strategy, seed, elastic)
                if row:
                    rows.append(row)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    print("\n| strategy | 2 ranks throughout: final test accuracy, median (range) | 3 -> 2 (rank 2 killed): median "
          "(range) | difference of medians | kill -> next completed step, median (max) s |")
    print("|---|---|---|---|---|")
    for strategy in args.strategies.split(","):
        def acc(mode):
            return [100 * r["test_accuracy"][-1] for r in rows if r["strategy"] == strategy and r["mode"] == mode]
        alone, lost = acc("2 ranks throughout"), acc("elastic 3 -> 2")
        kills = [r["kill_to_next_step_seconds"] for r in rows
                 if r["strategy"] == strategy and "kill_to_next_step_seconds" in r]
        if not alone or not lost:
            continue
        print(f"| {strategy} | {statistics.median(alone):.2f}% ({min(alone):.2f}-{max(alone):.2f}) | "
              f"{statistics.median(lost):.2f}% ({min(lost):.2f}-{max(lost):.2f}) | "
              f"{statistics.median(lost) - statistics.median(alone):+.2f} pt | "
              f"{statistics.median(kills):.3f} ({max(kills):.3f}) |" if kills else "")


if __name__ == "__main__":
    main()
