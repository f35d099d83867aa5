#!/usr/bin/python3
"""The paper's figures from bench/paper's JSON records (run_matrix.py calls draw_all; alone:
/usr/bin/python3 bench/paper/figures.py OUT/runs OUT/figures). PNG and SVG of each:

  fig3_total_time          Fig. 3: total training time per net, system and mode (log scale)
  fig4_lenet5_cifar10 ...  Figs. 4, 6, 8, 9: time per epoch split into load / forward / backward / exposed comm /
                           update, per system and mode (hidden comm drawn beside, hatched: it overlapped backward)
  fig5_ops_lenet5_cifar10  Figs. 5, 7, 10: the operators the paper names, per system (sync)
  table5_comm              Table V: mean exposed communication per epoch, per system and mode (CIFAR-10 nets)
  memory_per_loader        peak resident memory of a worker, caching against streaming loaders
  swaps                    each swap's epoch time against its preset's
"""

import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402
from matplotlib.ticker import FuncFormatter  # noqa: E402

SYSTEM_MODES = [("tensorflow", "sync"), ("tensorflow", "async"), ("pytorch", "sync"), ("mxnet", "sync"),
                ("mxnet", "async"), ("chainermn", "sync"), ("cntk", "sync")]
COLOURS = {"tensorflow": "tab:orange", "pytorch": "tab:red", "mxnet": "tab:blue", "chainermn": "tab:green",
           "cntk": "tab:purple"}
BREAKDOWN = {"lenet5_cifar10": "fig4", "alexnet_cifar10": "fig6", "resnet18_cifar10": "fig8a",
             "resnet18_cifar100": "fig8b", "resnet50_cifar10": "fig9a", "resnet50_cifar100": "fig9b"}
PROFILE = {"lenet5_cifar10": "fig5", "alexnet_cifar10": "fig7", "resnet18_cifar10": "fig10a",
           "resnet50_cifar10": "fig10b"}
# The operators each profiling figure of the paper names (sinew's kinds; the paper's convolution_backward is
# backward_data + backward_weights, fully_connected_backward likewise).
OPERATORS = {
    "fig5": ["convolution", "convolution_backward", "fully_connected", "fully_connected_backward", "tanh",
             "tanh_backward", "pooling", "pooling_backward", "weights_update"],
    "fig7": ["convolution", "convolution_backward", "fully_connected", "fully_connected_backward", "relu",
             "relu_backward", "pooling", "pooling_backward", "weights_update"],
    "fig10a": ["convolution", "convolution_backward", "batch_norm", "batch_norm_backward", "relu", "relu_backward",
               "weights_update"],
    "fig10b": ["convolution", "convolution_backward", "batch_norm", "batch_norm_backward", "relu", "relu_backward",
               "weights_update"],
}
PHASES = [("load", "tab:gray"), ("forward", "tab:cyan"), ("backward", "tab:purple"), ("comm_exposed", "tab:red"),
          ("update", "tab:olive")]


def net_id(r):
    return f"{r['net']}_{r['dataset']}"


def label(system, mode):
    return f"{system}\n{mode}"


def op_seconds(r, op):
    ops = r["operators_seconds_per_epoch"]
    if op.endswith("_backward") and op.split("_backward")[0] in ("convolution", "fully_connected"):
        parts = [op + "_data", op + "_weights"]
        return sum(ops.get(p, 0.0) for p in parts) if any(p in ops for p in parts) else None
    return ops.get(op)


def expected(nets):
    """The figure names draw_all writes for these nets (run_matrix.py --check looks for each)."""
    names = ["fig3_total_time", "table5_comm", "memory_per_loader", "swaps"]
    names += [f"{BREAKDOWN[n]}_{n}" for n in nets if n in BREAKDOWN]
    names += [f"{PROFILE[n]}_ops_{n}" for n in nets if n in PROFILE]
    return names


def save(fig, out, name, written):
    fig.tight_layout()
    for ext in ("png", "svg"):
        path = os.path.join(out, f"{name}.{ext}")
        fig.savefig(path, dpi=110)
    plt.close(fig)
    written.append(os.path.join(out, name + ".png"))


def subtitle(records, net=None):
    """The runs' settings, from the records drawn: one net's when net is given. Run lengths and generated data
    are said per net where the records differ (runs resumed into one directory may)."""
    if net is not None:
        records = [r for r in records if net_id(r) == net] or records
    r = records[0]
    lengths = {(x["epochs"], x["steps_per_epoch"]) for x in records}
    text = f"{r['workers']} workers, local batch {r['local_batch']}, "
    if len(lengths) == 1:
        text += f"{r['epochs']} epochs of {r['steps_per_epoch']} steps"
    else:
        text += "epochs and steps per net in REPRODUCTION.md"
    generated = sorted({net_id(x) for x in records if x["data_generated"]})
    if generated and len(generated) == len({net_id(x) for x in records}):
        text += " - GENERATED DATA"
    elif generated:
        text += " - GENERATED DATA: " + ", ".join(generated)
    return text


def draw_all(records, out):
    os.makedirs(out, exist_ok=True)
    written = []
    if not records:
        return written
    by = {(r["system"], r["mode"], r["variant"], net_id(r)): r for r in records}
    nets = [n for n in BREAKDOWN if any(k[3] == n for k in by)]

    # Fig. 3: total time, log scale, grouped by net.
    fig, ax = plt.subplots(figsize=(max(6, 2.2 * len(nets) + 3), 4.2))
    width = 0.8 / len(SYSTEM_MODES)
    for j, (s, md) in enumerate(SYSTEM_MODES):
        xs, ys = [], []
        for i, n in enumerate(nets):
            r = by.get((s, md, "preset", n))
            if r:
                xs.append(i + (j - len(SYSTEM_MODES) / 2 + 0.5) * width)
                ys.append(r["total_seconds"])
        ax.bar(xs, ys, width, label=f"{s} {md}", color=COLOURS[s], hatch="//" if md == "async" else None,
               edgecolor="black", linewidth=0.5)
    ax.set_yscale("log")
    ax.yaxis.set_major_formatter(FuncFormatter(lambda y, _: f"{y:g}"))
    # Minor ticks: only 2x and 5x a power of ten are labelled (every one crowds a decade).
    ax.yaxis.set_minor_formatter(FuncFormatter(lambda y, _: f"{y:g}" if f"{y:.0e}"[0] in "25" else ""))
    ax.tick_params(axis="y", which="minor", labelsize=7)
    ax.set_xticks(range(len(nets)), [n.replace("_", "\n") for n in nets])
    ax.set_ylabel("total training time (s, log)")
    ax.set_title("Fig. 3: execution time per system and mode\n" + subtitle(records), fontsize=10)
    ax.legend(fontsize=8, ncol=2)
    save(fig, out, "fig3_total_time", written)

    # Figs. 4, 6, 8, 9: stacked breakdown per net.
    for n in nets:
        rows = [(s, md, by[(s, md, "preset", n)]) for s, md in SYSTEM_MODES if (s, md, "preset", n) in by]
        fig, ax = plt.subplots(figsize=(7.5, 4.2))
        for i, (s, md, r) in enumerate(rows):
            bottom = 0.0
            p = r["phases_seconds_per_epoch"]
            for k, (phase, colour) in enumerate(PHASES):
                ax.bar(i - 0.15, p[phase], 0.3, bottom=bottom, color=colour, edgecolor="black", linewidth=0.4,
                       label=phase.replace("_", " ") if i == 0 else None)
                bottom += p[phase]
            ax.bar(i + 0.17, p["comm_hidden"], 0.2, color="tab:red", alpha=0.35, hatch="..", edgecolor="black",
                   linewidth=0.4, label="comm hidden (overlapped)" if i == 0 else None)
        ax.set_xticks(range(len(rows)), [label(s, md) for s, md, _ in rows], fontsize=8)
        ax.set_ylabel("seconds per epoch (workers' mean)")
        ax.set_title(f"{BREAKDOWN[n].replace('fig', 'Fig. ')}: breakdown of execution time ({n})\n"
                     + subtitle(records, n), fontsize=10)
        ax.legend(fontsize=7)
        save(fig, out, f"{BREAKDOWN[n]}_{n}", written)

    # Figs. 5, 7, 10: operator bars, systems side by side (sync presets; async TensorFlow shares sync's backend).
    for n in nets:
        if n not in PROFILE:
            continue
        ops = OPERATORS[PROFILE[n]]
        systems = [s for s in ("tensorflow", "pytorch", "mxnet", "chainermn", "cntk") if (s, "sync", "preset", n) in by]
        fig, ax = plt.subplots(figsize=(max(7, 1.0 * len(ops) + 2), 4.2))
        width = 0.8 / max(len(systems), 1)
        for j, s in enumerate(systems):
            r = by[(s, "sync", "preset", n)]
            ys = [1e3 * (op_seconds(r, op) or 0.0) for op in ops]
            ax.bar([i + (j - len(systems) / 2 + 0.5) * width for i in range(len(ops))], ys, width, label=s,
                   color=COLOURS[s], edgecolor="black", linewidth=0.4)
        ax.set_xticks(range(len(ops)), [o.replace("_", "\n") for o in ops], fontsize=7)
        ax.set_ylabel("ms per epoch (rank 0)")
        ax.set_yscale("log")
        ax.set_title(f"{PROFILE[n].replace('fig', 'Fig. ')}: operator profile ({n}, sync)\n"
                     + subtitle(records, n), fontsize=10)
        ax.legend(fontsize=8)
        save(fig, out, f"{PROFILE[n]}_ops_{n}", written)

    # Table V: mean exposed comm over the CIFAR-10 nets.
    cells = [("tensorflow", "sync"), ("pytorch", "sync"), ("mxnet", "sync"), ("tensorflow", "async"),
             ("mxnet", "async")]
    c10 = [n for n in nets if n.endswith("cifar10")]
    vals = []
    for s, md in cells:
        xs = [by[(s, md, "preset", n)]["phases_seconds_per_epoch"]["comm_exposed"] for n in c10
              if (s, md, "preset", n) in by]
        vals.append(1e3 * sum(xs) / len(xs) if xs else 0.0)
    paper = [1741.81, 869.51, 546.19, 586.65, 410.54]
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(10, 4))
    for a, ys, what in ((ax, vals, "sinew: ms per epoch (mean over CIFAR-10 nets)"), (ax2, paper, "paper: Table V")):
        a.bar(range(len(cells)), ys, color=[COLOURS[s] for s, _ in cells], edgecolor="black", linewidth=0.5,
              hatch=None)
        for i, y in enumerate(ys):
            a.text(i, y, f"{y:.1f}", ha="center", va="bottom", fontsize=8)
        a.set_xticks(range(len(cells)), [label(s, md) for s, md in cells], fontsize=8)
        a.set_title(what, fontsize=10)
    fig.suptitle("Table V: mean communication time per system and mode (" + subtitle(records) + ")", fontsize=10)
    save(fig, out, "table5_comm", written)

    # Memory per loader: the largest worker's peak RSS, each run coloured by its loader.
    runs = [r for r in records]
    runs.sort(key=lambda r: (net_id(r), r["loader"], r["system"], r["mode"], r["variant"]))
    fig, ax = plt.subplots(figsize=(max(7, 0.35 * len(runs) + 2), 4.5))
    for i, r in enumerate(runs):
        mib = max(r["peak_rss_bytes_per_rank"][:r["workers"]]) / 2**20
        ax.bar(i, mib, color="tab:orange" if r["loader"] == "cached" else "tab:blue", edgecolor="black",
               linewidth=0.4, label=None)
    handles = [Patch(color="tab:orange", label="cached (TensorFlow, ChainerMN, the loader=cached swap)"),
               Patch(color="tab:blue", label="streaming (PyTorch, MXNet)")]
    ax.set_xticks(range(len(runs)), [f"{r['system']} {r['mode']}\n{r['variant']}\n{r['net']}" for r in runs],
                  fontsize=6, rotation=90)
    ax.set_ylabel("peak RSS of the largest worker (MiB)")
    ax.set_title("Memory per loader\n" + subtitle(records), fontsize=10)
    ax.set_ylim(0, ax.get_ylim()[1] * 1.25)
    ax.legend(handles=handles, fontsize=8, loc="upper left")
    save(fig, out, "memory_per_loader", written)

    # Each swap against its preset: epoch time, preset = 1.
    swaps = [r for r in records if r["variant"] != "preset"]
    fig, ax = plt.subplots(figsize=(max(6, 0.6 * len(swaps) + 3), 4.5))
    names, ys = [], []
    for r in swaps:
        base = by.get((r["system"], r["mode"], "preset", net_id(r)))
        if base:
            names.append(f"{r['system']} {r['mode']}\n{r['variant']}\n{net_id(r)}")
            ys.append(r["time_per_epoch_seconds"] / base["time_per_epoch_seconds"])
    ax.bar(range(len(ys)), ys, color=[COLOURS[n.split()[0]] for n in names], edgecolor="black", linewidth=0.4)
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_xticks(range(len(ys)), names, fontsize=6)
    ax.set_ylabel("epoch time / the preset's")
    ax.set_title("One policy swapped: its effect on the epoch\n" + subtitle(records), fontsize=10)
    save(fig, out, "swaps", written)
    return written


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: figures.py RUNS_DIR OUT_DIR")
    records = []
    for name in sorted(os.listdir(sys.argv[1])):
        if name.endswith(".json"):
            with open(os.path.join(sys.argv[1], name)) as f:
                records.append(json.load(f))
    for p in draw_all(records, sys.argv[2]):
        print(p)


if __name__ == "__main__":
    main()
