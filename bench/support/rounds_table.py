#!/usr/bin/python3
"""Prints the markdown table of a results folder's interleaved rounds: for every net, mode, batch and precision the
runs' images/s, PyTorch's, the ratios and their median (next to a goal where one is given; "no anchor" where
PyTorch's side failed), the bf16 autocast ratios and the share of the peak; then ResNet-50's bf16 against f32, the
Eigen backend's single-thread inference against OneDnn's and bench/dist's ring against PyTorch's DDP, where the folder
has them.

The folder holds what the issue rounds' run.sh scripts write (bench/results/*-issue34-debian*): lenet5-rN.json,
zoo-rN.json, zoo-cifar-rN.json, resnet50-bf16-rN.json, avx2-lenet5-rN.json and avx2-zoo-rN.json (sinew alone
under ONEDNN_MAX_CPU_ISA=AVX2, set against the same round's PyTorch: rows "AVX2"), and avx2build-lenet5-rN.json and
avx2build-zoo-rN.json (the same from the avx2 preset's build: rows "AVX2 build"), eigen-inference.json (bench/zoo
--backend eigen --no-training: set against round 1's OneDnn inference rows) and ddp-rN.json (bench/dist --only ring).
Every file is optional; N counts from 1.

Where the rows carry both sides' cache-line round trips (bench/zoo and bench/lenet5 since 2026-12-06), the last
column says where the host had placed the two vCPUs for each run, sinew's side then PyTorch's: n (near, a round trip
under 200 ns before and after: a shared cache), f (far: none), m (it moved during the run). On the 2-vCPU guest
these rounds ran on, AlexNet trained 1.2-1.3x as fast with the vCPUs near as far in some rounds
(bench/results/2026-12-06-zen5-issue34-every-row-both-stacks) and no faster in others
(bench/results/2026-12-06-zen5-issue34-five-rounds): a ratio whose sides ran under different placements may
measure the host as much as the code, so the column adds the median of the runs whose sides ran alike. The verdict
stays on every run's median.

Usage: rounds_table.py DIR [--goal NET=RATIO ...] [--batch1-goal RATIO] [--eigen-within X] [--ddp-goal RATIO]
                       [--ddp-exposed SHARE]
  --goal NET=RATIO     the training goal of NET (f32; the bf16 row of resnet18_cifar as resnet18_cifar_bf16)
  --batch1-goal RATIO  the goal of every single-thread inference row at batch 1
  --eigen-within X     the goal of the Eigen backend's inference: at most X times slower than OneDnn's
  --ddp-goal RATIO     the goal of the ring against PyTorch's DDP
  --ddp-exposed SHARE  the most of the ring's step the all-reduce may leave exposed (0.08: 8%)
"""
import argparse
import json
import os
import statistics


def rounds(folder, pattern):
    """The JSON rows of pattern's rounds, in round order, as long as they run unbroken from 1."""
    out = []
    while os.path.exists(path := os.path.join(folder, pattern.format(len(out) + 1))):
        with open(path) as f:
            out.append(json.load(f))
    return out


def row_of(rows, net, mode="train", batch=None, precision="f32"):
    for r in rows:
        if (r["net"] == net and r.get("mode", "train") == mode and r["precision"] == precision
                and (batch is None or r["batch"] == batch)):
            return r
    return None


def listed(values, digits):
    return ", ".join(f"{v:.{digits}f}" for v in values)


NEAR_NS = 200  # a cache line's round trip below this: the two vCPUs share a cache


def placement(trip):
    """n, f or m (near, far, moved) for a [before, after] round trip in ns; None where the run recorded none."""
    if not trip or None in trip or 0 in trip:
        return None
    near = [t < NEAR_NS for t in trip]
    return "n" if all(near) else "f" if not any(near) else "m"


def placement_cell(runs, ratios, torch_key):
    """Each run's placements, sinew's then PyTorch's, and the median ratio of the runs whose sides ran alike."""
    pairs = [(placement(r.get("core_round_trip_ns")), placement(r.get(torch_key))) for r in runs]
    if all(t is None for _, t in pairs):
        return ""
    alike = [x for x, (a, b) in zip(ratios, pairs) if a is not None and a == b and a != "m"]
    cell = ", ".join(f"{a or '?'}/{b or '?'}" for a, b in pairs)
    return cell + (f"; alike: {statistics.median(alike):.2f}x ({len(alike)})" if alike else "; none alike")


def table_row(name, mode, precision, runs, anchors, goal, same_round_anchor=False, autocast=None):
    ours = [r["images_per_second"] for r in runs]
    shares = [100 * (r.get("share_of_peak") or 0.0) for r in runs]
    if None in anchors:  # PyTorch's side failed in some round (its child's error is in that round's text file)
        return (f"| {name} | {mode} | {runs[0]['batch']} x {runs[0]['threads']} | {precision} | {listed(ours, 1)} | "
                f"failed in {anchors.count(None)} of {len(anchors)} rounds | | | {'no anchor' if goal else ''} | | "
                f"{statistics.median(shares):.0f}% ({listed(shares, 0)}) | |")
    ratios = [a / b if b else 0.0 for a, b in zip(ours, anchors)]
    median = statistics.median(ratios)
    verdict = "" if goal is None else f"{goal}x: {'met' if median >= goal else 'missed'}"
    autocast_cell = "" if not autocast else f"{listed(autocast, 2)} -> {statistics.median(autocast):.2f}"
    anchor_cell = "(same round)" if same_round_anchor else listed(anchors, 1)
    placed = "" if same_round_anchor else placement_cell(runs, ratios, "pytorch_core_round_trip_ns")
    if autocast and not same_round_anchor:
        placed_autocast = placement_cell(runs, autocast, "pytorch_bf16_autocast_core_round_trip_ns")
        placed += f"; autocast: {placed_autocast}" if placed_autocast else ""
    return (f"| {name} | {mode} | {runs[0]['batch']} x {runs[0]['threads']} | {precision} | {listed(ours, 1)} | "
            f"{anchor_cell} | {listed(ratios, 2)} | **{median:.2f}x** | {verdict} | {autocast_cell} | "
            f"{statistics.median(shares):.0f}% ({listed(shares, 0)}) | {placed} |")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder")
    parser.add_argument("--goal", action="append", default=[], metavar="NET=RATIO")
    parser.add_argument("--batch1-goal", type=float)
    parser.add_argument("--eigen-within", type=float)
    parser.add_argument("--ddp-goal", type=float)
    parser.add_argument("--ddp-exposed", type=float)
    args = parser.parse_args()
    goals = {}
    for g in args.goal:
        net, _, ratio = g.partition("=")
        goals[net] = float(ratio)

    lenet, zoo = rounds(args.folder, "lenet5-r{}.json"), rounds(args.folder, "zoo-r{}.json")
    # The AVX2 rows: the default build capped, and the avx2 preset's build capped (what an AVX2 machine runs).
    capped_builds = [(label, rounds(args.folder, prefix + "lenet5-r{}.json"),
                      rounds(args.folder, prefix + "zoo-r{}.json"))
                     for prefix, label in (("avx2-", "AVX2"), ("avx2build-", "AVX2 build"))]
    cifar, resnet50 = rounds(args.folder, "zoo-cifar-r{}.json"), rounds(args.folder, "resnet50-bf16-r{}.json")
    ddp = rounds(args.folder, "ddp-r{}.json")
    eigen_path = os.path.join(args.folder, "eigen-inference.json")
    eigen = json.load(open(eigen_path)) if os.path.exists(eigen_path) else []
    if not (lenet or zoo or cifar or resnet50 or ddp):
        print(f"rounds_table.py: {args.folder} holds no round files (lenet5-r1.json, zoo-r1.json, ...)")
        return 1

    if lenet or zoo or cifar:
        print("| net | mode | batch x thr | prec | sinew img/s (runs) | PyTorch best (runs) | ratio (runs) | median "
              "| goal | autocast ratio (runs) | share of peak (runs) | vCPUs sinew/PyTorch (runs) |")
        print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    if lenet:
        runs = [r[0] for r in lenet]
        anchors = [r["pytorch_images_per_second"] for r in runs]
        print(table_row("lenet5", "train", "f32", runs, anchors, goals.get("lenet5")))
        for label, lenet_capped, _ in capped_builds:
            if len(lenet_capped) == len(lenet):
                print(table_row(f"lenet5 {label}", "train", "f32", [r[0] for r in lenet_capped], anchors,
                                goals.get("lenet5"), same_round_anchor=True))
    nets = sorted({r["net"] for r in zoo[0]}) if zoo else []
    for net in nets:
        for mode, batch in (("train", None), ("inference", 1), ("inference", 42)):
            runs = [row_of(z, net, mode, batch) for z in zoo]
            if None in runs:
                continue
            anchors = [r["pytorch_images_per_second"] for r in runs]
            goal = goals.get(net) if mode == "train" else (args.batch1_goal if batch == 1 else None)
            print(table_row(net, mode, "f32", runs, anchors, goal))
            for label, _, zoo_capped in capped_builds:
                if mode == "train" and len(zoo_capped) == len(zoo):
                    capped = [row_of(z, net) for z in zoo_capped]
                    if None not in capped:
                        print(table_row(f"{net} {label}", mode, "f32", capped, anchors, goal, same_round_anchor=True))
    for precision in ("f32", "bf16"):
        runs = [row_of(c, "resnet18_cifar", precision=precision) for c in cifar]
        if not runs or None in runs:
            continue
        autocast = [r["ratio_to_pytorch_bf16_autocast"] for r in runs] if precision == "bf16" else None
        goal = goals.get("resnet18_cifar" + ("_bf16" if precision == "bf16" else ""))
        print(table_row("resnet18_cifar", "train", precision, runs, [r["pytorch_images_per_second"] for r in runs],
                        goal, autocast=autocast))
    bf16_rows = [row_of(r, "resnet50", precision="bf16") for r in resnet50]
    if resnet50 and None in bf16_rows:
        print(f"\nResNet-50, sinew alone: bf16 failed in {bf16_rows.count(None)} of {len(resnet50)} rounds (the "
              "rounds' resnet50-bf16-rN.txt say how)")
    elif resnet50:
        f32 = [row_of(r, "resnet50")["images_per_second"] for r in resnet50]
        bf16 = [r["images_per_second"] for r in bf16_rows]
        m32, m16 = statistics.median(f32), statistics.median(bf16)
        print(f"\nResNet-50, sinew alone: f32 {listed(f32, 1)} img/s; bf16 {listed(bf16, 1)} (median {m16:.1f} against "
              f"{m32:.1f}: bf16 {m16 / m32:.2f}x; per round {listed([b / f for f, b in zip(f32, bf16)], 2)})")
    if eigen and zoo:
        print("\n| net | batch | Eigen img/s | OneDnn img/s (round 1) | OneDnn / Eigen | goal |\n|---|---|---|---|---|---|")
        for e in eigen:
            o = row_of(zoo[0], e["net"], "inference", e["batch"])
            if o is None:
                continue
            slower = o["images_per_second"] / e["images_per_second"]
            verdict = "" if args.eigen_within is None else \
                f"<= {args.eigen_within}x: {'met' if slower <= args.eigen_within else 'missed'}"
            print(f"| {e['net']} | {e['batch']} | {e['images_per_second']:.1f} | {o['images_per_second']:.1f} | "
                  f"{slower:.2f}x | {verdict} |")
    if ddp:
        runs = [r[0] for r in ddp]
        ratios = [r["ratio"] or 0.0 for r in runs]
        exposed = [100 * r["exposed_comm_share"] for r in runs]
        mr, me = statistics.median(ratios), statistics.median(exposed)
        verdict = []
        if args.ddp_goal is not None:
            verdict.append(f"{args.ddp_goal}x: {'met' if mr >= args.ddp_goal else 'missed'}")
        if args.ddp_exposed is not None:
            verdict.append(f"<= {100 * args.ddp_exposed:.0f}%: {'met' if me <= 100 * args.ddp_exposed else 'missed'}")
        r0 = runs[0]
        print(f"\n| DDP: {r0['net']}, {r0['ranks']} ranks x {r0['threads_per_rank']} threads, bind {r0['binding']}, batch "
              f"{r0['local_batch']} a rank | runs | median |\n|---|---|---|")
        print(f"| ring img/s | {listed([r['images_per_second'] for r in runs], 1)} | "
              f"{statistics.median([r['images_per_second'] for r in runs]):.1f} |")
        print(f"| PyTorch DDP img/s | {listed([r['pytorch_ddp_images_per_second'] or 0.0 for r in runs], 1)} | "
              f"{statistics.median([r['pytorch_ddp_images_per_second'] or 0.0 for r in runs]):.1f} |")
        print(f"| ring / DDP | {listed(ratios, 2)} | **{mr:.2f}x** |")
        print(f"| exposed share of the ring's step | {listed(exposed, 1)} % | **{me:.1f}%** |")
        if verdict:
            print(f"| goal | | {'; '.join(verdict)} |")
    peaks = [r[0]["peak_gflops"] for r in lenet] + [r["peak_gflops"] for z in zoo for r in z if r["mode"] == "train"]
    if peaks:
        print(f"\nf32 peak read in the runs: {min(peaks):.0f}-{max(peaks):.0f} GFLOP/s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
