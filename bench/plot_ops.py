#!/usr/bin/python3
"""One log-log plot per operation from bench/ops's CSV: seconds against size, one line per backend.

Usage: /usr/bin/python3 bench/plot_ops.py OPS.csv OUT_DIR   (writes OUT_DIR/<operation>.png)
Uses Debian's python3-matplotlib (Agg backend, no display needed).
"""

import csv
import os
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

STYLE = {"onednn": ("tab:blue", "o"), "eigen": ("tab:orange", "s"), "pytorch": ("tab:green", "^"),
         "sinew": ("tab:purple", "D")}
AXIS = {"elements": "elements (floats)", "side": "matrix side n (n x n x n)", "flop": "work per call (flop)"}


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    path, out_dir = sys.argv[1], sys.argv[2]
    os.makedirs(out_dir, exist_ok=True)
    series = defaultdict(lambda: defaultdict(list))  # operation -> backend -> [(size, seconds, shape)]
    units = {}
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            if float(r["seconds"]) <= 0 or float(r["size"]) <= 0:
                continue
            series[r["operation"]][r["backend"]].append((float(r["size"]), float(r["seconds"]), r["shape"]))
            units[r["operation"]] = r["size_unit"]
    for op, by_backend in sorted(series.items()):
        fig, ax = plt.subplots(figsize=(6.4, 4.4))
        for backend, points in sorted(by_backend.items()):
            points.sort()
            color, marker = STYLE.get(backend, (None, "x"))
            # Layer shapes are not a sweep (several have the same flop count): points, no lines.
            ax.loglog([p[0] for p in points], [p[1] for p in points], marker=marker, color=color,
                      linestyle="-" if units[op] != "flop" else "none", linewidth=1, alpha=0.8, label=backend)
        ax.set_title(op)
        ax.set_xlabel(AXIS.get(units[op], units[op]))
        ax.set_ylabel("seconds per call (median)")
        ax.grid(True, which="both", linewidth=0.3)
        ax.legend()
        fig.tight_layout()
        fig.savefig(os.path.join(out_dir, op + ".png"), dpi=110)
        plt.close(fig)
    print("plot_ops: %d plots in %s" % (len(series), out_dir))


if __name__ == "__main__":
    main()
