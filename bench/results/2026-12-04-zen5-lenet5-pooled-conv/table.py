#!/usr/bin/python3
"""Prints the markdown rows of run.sh's folders: per folder, the before and after builds' LeNet-5 img/s, the PyTorch
img/s measured in each run, the ratios, their medians, and after / before within each round.
Usage: table.py DIR..."""
import json
import os
import statistics
import sys


def runs(folder, name):
    out = []
    while os.path.exists(path := os.path.join(folder, f"{name}-r{len(out) + 1}.json")):
        with open(path) as f:
            out.append(json.load(f)[0])
    return out


def listed(values, digits):
    return ", ".join(f"{v:.{digits}f}" for v in values)


print("| folder | build | sinew img/s (rounds) | PyTorch img/s (rounds) | ratio (rounds) | median ratio "
      "| after / before (rounds) | share of peak (rounds) | PyTorch |")
print("|---|---|---|---|---|---|---|---|---|")
for folder in sys.argv[1:]:
    before, after = runs(folder, "before"), runs(folder, "after")
    speedups = [a["images_per_second"] / b["images_per_second"] for a, b in zip(after, before)]
    for name, rows in (("before", before), ("after", after)):
        ratios = [r["ratio"] for r in rows]
        gain = f"{listed(speedups, 3)} (median {statistics.median(speedups):.3f})" if name == "after" else ""
        print(f"| {os.path.basename(folder.rstrip('/'))} | {name} | {listed([r['images_per_second'] for r in rows], 0)} "
              f"| {listed([r['pytorch_images_per_second'] for r in rows], 0)} | {listed(ratios, 2)} "
              f"| **{statistics.median(ratios):.2f}x** | {gain} "
              f"| {listed([100 * r['share_of_peak'] for r in rows], 0)}% "
              f"| {rows[0]['pytorch']}: {', '.join(r['pytorch_best'] for r in rows)} |")
