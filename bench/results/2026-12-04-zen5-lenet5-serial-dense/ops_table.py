#!/usr/bin/python3
"""Prints the markdown rows of run.sh's bench/ops rounds in a folder: per Dense shape and pass, the median over the
rounds of each build's time and after / before. Usage: ops_table.py DIR"""
import collections
import csv
import glob
import os
import statistics
import sys

times = collections.defaultdict(list)
for path in sorted(glob.glob(os.path.join(sys.argv[1], "ops-*-r*.csv"))):
    build = os.path.basename(path).split("-")[1]
    with open(path) as f:
        for row in csv.DictReader(f):
            times[(row["shape"], row["operation"], build)].append(1e6 * float(row["seconds"]))
print("| shape | pass | before us (rounds) | after us (rounds) | after / before (medians) |")
print("|---|---|---|---|---|")
for shape, op in sorted({(s, o) for s, o, _ in times}, key=lambda k: (k[0].split()[0], k[1])):
    b, a = times[(shape, op, "before")], times[(shape, op, "after")]
    if not (a and b):
        continue
    cells = [", ".join(f"{v:.1f}" for v in x) for x in (b, a)]
    print(f"| {shape} | {op} | {cells[0]} | {cells[1]} | {statistics.median(a) / statistics.median(b):.2f} |")
