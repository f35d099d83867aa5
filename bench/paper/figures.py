#!/usr/bin/python3
"""The paper's figures from bench/paper's JSON records (run_matrix.py calls draw_all; alone:
/usr/bin/python3 bench/paper/figures.py OUT/runs OUT/figures). PNG and SVG of each:

  fig3_total_time          Fig. 3: time per epoch of the paper's length (median step x 396) per system and mode,
                           a panel per net (log scale), error bars from the repeats
  fig4_lenet5_cifar10 ...  Figs. 4, 6, 8, 9: time per step split into load / forward / backward / exposed comm /
                           update, per system and mode (hidden comm drawn beside, hatched: it overlapped backward),
                           the step's spread over repeats as an error bar
  fig5_ops_lenet5_cifar10  Figs. 5, 7, 10: the operators the paper names, per system (sync), ms per step
  table5_comm              Table V: communication (the paper's residual) per epoch of the paper's length, per
                           system and mode (CIFAR-10 nets), beside the paper's
  memory_per_loader        peak resident memory of a worker, a panel per net, caching against streaming loaders
  swaps                    preset / swap per step (the findings table's direction), with the repeats' spread
"""

import json
import math
import os
import sys
import textwrap

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter  # noqa: E402

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
    ops = ops_per_step(r)
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


def wrap_titles(fig):
    """Titles wrapped to their width (a figure of one net's panel is narrow), so none is clipped."""
    def wrap(t, inches):
        if t is None or not t.get_text():
            return
        chars = max(30, int(inches * 72 / (0.55 * t.get_fontsize())))
        t.set_text("\n".join(textwrap.fill(line, chars) for line in t.get_text().split("\n")))
    wrap(fig._suptitle, fig.get_size_inches()[0])
    for ax in fig.axes:
        wrap(ax.title, ax.get_position().width * fig.get_size_inches()[0] + 0.8)


def save(fig, out, name, written, layout=True):
    wrap_titles(fig)
    if layout:
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
    lengths = {(x.get("warmup_steps"), x.get("timed_steps"), len(x.get("repeats") or [1])) for x in records}
    text = f"{r['workers']} workers, local batch {r['local_batch']}, "
    if len(lengths) == 1:
        w, t, k = next(iter(lengths))
        text += f"{k} repeats of {w} warm-up + {t} timed steps"
    else:
        text += "steps and repeats per net in REPRODUCTION.md"
    pl = r.get("placement") or {}
    if pl.get("emulated"):
        text += f", {pl['hosts']} hosts, link {(r.get('link') or {}).get('name')}"
    generated = sorted({net_id(x) for x in records if x["data_generated"]})
    if generated and len(generated) == len({net_id(x) for x in records}):
        text += " - GENERATED DATA"
    elif generated:
        text += " - GENERATED DATA: " + ", ".join(generated)
    return text


PAPER_STEPS_PER_EPOCH = 50000 // 126  # CIFAR's training images in the paper's global batches (run_matrix.py)


def step_stats(r):
    """(median, min, max) of a record's step time over its repeats (schema 3); older records: the mean step."""
    st = r.get("step_seconds")
    if isinstance(st, dict):
        return st["median"], st["min"], st["max"]
    x = r["time_per_epoch_seconds"] / max(r["steps_per_epoch"], 1)
    return x, x, x


def phases_per_step(r):
    if "phases_seconds_per_step" in r:
        return r["phases_seconds_per_step"]
    return {k: v / max(r["steps_per_epoch"], 1) for k, v in r["phases_seconds_per_epoch"].items()}


def ops_per_step(r):
    if "operators_seconds_per_step" in r:
        return r["operators_seconds_per_step"]
    return {k: v / max(r["steps_per_epoch"], 1) for k, v in r["operators_seconds_per_epoch"].items()}


def log_axis(ax, axis="y"):
    """A log axis a reader can read: 1, 2 and 5 of every decade labelled in plain numbers."""
    a = ax.yaxis if axis == "y" else ax.xaxis
    a.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    a.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    a.set_minor_locator(LogLocator(base=10, subs=(3.0, 4.0, 6.0, 7.0, 8.0, 9.0)))
    a.set_minor_formatter(NullFormatter())
    ax.grid(True, axis=axis, which="major", linewidth=0.4, alpha=0.5)


SHORT = {"tensorflow": "TF", "pytorch": "PyTorch", "mxnet": "MXNet", "chainermn": "ChainerMN", "cntk": "CNTK"}


def decades(ax, lo, hi):
    """Log bars start at a whole decade below the smallest, so no bar's length depends on where the axis was cut."""
    ax.set_ylim(10 ** math.floor(math.log10(lo)), 10 ** math.ceil(math.log10(hi * 1.05)))


def err(med, lo, hi):
    return [[max(med - lo, 0.0)], [max(hi - med, 0.0)]]


def draw_all(records, out):
    os.makedirs(out, exist_ok=True)
    written = []
    if not records:
        return written
    by = {(r["system"], r["mode"], r["variant"], net_id(r)): r for r in records}
    nets = [n for n in BREAKDOWN if any(k[3] == n for k in by)]

    # Fig. 3: time per epoch of the paper's length (its 396 steps) from each run's median step, one panel per net
    # so that every bar of a panel has the same length; error bars: the repeats' min and max.
    cols = min(len(nets), 3)
    rows_n = (len(nets) + cols - 1) // cols
    fig, axes = plt.subplots(rows_n, cols, figsize=(4.6 * cols, 3.8 * rows_n + 0.6), squeeze=False)
    for ax, n in zip(axes.flat, nets):
        present = [(s, md) for s, md in SYSTEM_MODES if (s, md, "preset", n) in by]
        ys = []
        for i, (s, md) in enumerate(present):
            med, lo, hi = (PAPER_STEPS_PER_EPOCH * x for x in step_stats(by[(s, md, "preset", n)]))
            ax.bar(i, med, 0.7, yerr=err(med, lo, hi), capsize=3, color=COLOURS[s],
                   hatch="//" if md == "async" else None, edgecolor="black", linewidth=0.5)
            ys += [lo, hi]
        ax.set_yscale("log")
        log_axis(ax)
        if ys and min(ys) > 0:
            decades(ax, min(ys), max(ys))
        ax.set_xticks(range(len(present)), [f"{SHORT[s]}\n{md}" for s, md in present], fontsize=7)
        ax.set_title(n, fontsize=10)
        ax.set_ylabel(f"s per epoch ({PAPER_STEPS_PER_EPOCH} steps, log)", fontsize=8)
    for ax in list(axes.flat)[len(nets):]:
        ax.axis("off")
    fig.suptitle("Fig. 3: execution time per system and mode, per epoch of the paper's length (median step x "
                 f"{PAPER_STEPS_PER_EPOCH}; bars: repeats' min-max)\n" + subtitle(records), fontsize=10)
    save(fig, out, "fig3_total_time", written)

    # Figs. 4, 6, 8, 9: stacked breakdown per step, the step's spread over repeats as an error bar on the stack.
    for n in nets:
        rows = [(s, md, by[(s, md, "preset", n)]) for s, md in SYSTEM_MODES if (s, md, "preset", n) in by]
        fig, ax = plt.subplots(figsize=(7.5, 4.4))
        for i, (s, md, r) in enumerate(rows):
            bottom = 0.0
            p = phases_per_step(r)
            for k, (phase, colour) in enumerate(PHASES):
                ax.bar(i - 0.15, 1e3 * p[phase], 0.3, bottom=bottom, color=colour, edgecolor="black", linewidth=0.4,
                       label=phase.replace("_", " ") if i == 0 else None)
                bottom += 1e3 * p[phase]
            med, lo, hi = step_stats(r)
            # centred on the median step (the stack is the phases' medians, which need not sum to it exactly)
            ax.errorbar(i - 0.15, 1e3 * med, yerr=[[1e3 * max(med - lo, 0)], [1e3 * max(hi - med, 0)]], color="black",
                        capsize=4, linewidth=1, label="step: median, repeats' min-max" if i == 0 else None)
            ax.bar(i + 0.17, 1e3 * p["comm_hidden"], 0.2, color="tab:red", alpha=0.35, hatch="..",
                   edgecolor="black", linewidth=0.4, label="comm hidden (overlapped)" if i == 0 else None)
        ax.set_xticks(range(len(rows)), [label(s, md) for s, md, _ in rows], fontsize=8)
        ax.set_ylabel("ms per step (workers' mean, median of repeats)")
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
        ax.set_ylabel("ms per step (rank 0, log)")
        ax.set_yscale("log")
        log_axis(ax)
        ax.set_title(f"{PROFILE[n].replace('fig', 'Fig. ')}: operator profile ({n}, sync)\n"
                     + subtitle(records, n), fontsize=10)
        ax.legend(fontsize=8)
        save(fig, out, f"{PROFILE[n]}_ops_{n}", written)

    # Table V: communication as the paper defines it (step - load - forward - backward), seconds per epoch of the
    # paper's length, mean over the CIFAR-10 nets, beside the paper's.
    cells = [("tensorflow", "sync"), ("pytorch", "sync"), ("mxnet", "sync"), ("tensorflow", "async"),
             ("mxnet", "async")]
    c10 = [n for n in nets if n.endswith("cifar10")]
    vals = []
    for s, md in cells:
        xs = []
        for n in c10:
            r = by.get((s, md, "preset", n))
            if r:
                p = phases_per_step(r)
                xs.append(max(step_stats(r)[0] - p["load"] - p["forward"] - p["backward"], 0.0))
        vals.append(PAPER_STEPS_PER_EPOCH * sum(xs) / len(xs) if xs else 0.0)
    paper = [1741.81, 869.51, 546.19, 586.65, 410.54]
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(10, 4.4))
    for a, ys, what in ((ax, vals, "sinew (s per epoch)"), (ax2, paper, "paper, Table V (s per epoch)")):
        a.bar(range(len(cells)), ys, color=[COLOURS[s] for s, _ in cells], edgecolor="black", linewidth=0.5,
              hatch=None)
        for i, y in enumerate(ys):
            a.text(i, y, f"{y:.4g}", ha="center", va="bottom", fontsize=8)
        a.set_xticks(range(len(cells)), [label(s, md) for s, md in cells], fontsize=8)
        a.set_ylim(0, max(ys + [1e-9]) * 1.15)
        a.set_title(what, fontsize=10)
    fig.suptitle("Table V: communication per epoch (step - load - forward - backward) x "
                 f"{PAPER_STEPS_PER_EPOCH} steps, mean over the CIFAR-10 nets\n" + subtitle(records), fontsize=10)
    wrap_titles(fig)
    fig.tight_layout(rect=(0, 0, 1, 0.9))
    save(fig, out, "table5_comm", written, layout=False)

    # Memory: the largest worker's peak RSS, one panel per net, a bar per run coloured by its loader.
    most = max(sum(1 for r in records if net_id(r) == n) for n in nets)
    cols = min(len(nets), 3)
    rows_n = (len(nets) + cols - 1) // cols
    fig, axes = plt.subplots(rows_n, cols, figsize=(max(7.5, 5.2 * cols), (0.26 * most + 1.2) * rows_n + 1.6),
                             squeeze=False)
    for ax in list(axes.flat)[len(nets):]:
        ax.axis("off")
    for ax, n in zip(axes.flat, nets):
        runs = sorted([r for r in records if net_id(r) == n], key=lambda r: (r["loader"], r["system"], r["mode"],
                                                                               r["variant"]))
        for i, r in enumerate(runs):
            mib = max(r["peak_rss_bytes_per_rank"][:r["workers"]]) / 2**20
            ax.barh(i, mib, color="tab:orange" if r["loader"] == "cached" else "tab:blue", edgecolor="black",
                    linewidth=0.4)
            ax.text(mib, i, f" {mib:.0f}", va="center", fontsize=6)
        ax.set_yticks(range(len(runs)), [f"{r['system']} {r['mode']}"
                                         + ("" if r["variant"] == "preset" else f" {r['variant']}") for r in runs],
                      fontsize=7)
        ax.invert_yaxis()
        ax.set_xlabel("peak RSS of the largest worker (MiB)", fontsize=8)
        ax.set_title(n, fontsize=10)
    handles = [Patch(color="tab:orange", label="cached loader (TensorFlow, ChainerMN, CNTK, loader=cached)"),
               Patch(color="tab:blue", label="streaming loader (PyTorch, MXNet)")]
    fig.legend(handles=handles, fontsize=8, loc="lower center", ncol=2 if cols > 1 else 1)
    fig.suptitle("Memory per loader, per net\n" + subtitle(records), fontsize=10)
    wrap_titles(fig)
    fig.tight_layout(rect=(0, (0.5 if cols > 1 else 0.7) / fig.get_size_inches()[1], 1,
                           1 - 0.7 / fig.get_size_inches()[1]))
    save(fig, out, "memory_per_loader", written, layout=False)

    # Each swap, in the findings table's direction: the preset's step / the swap's (> 1: the swap is faster),
    # with the repeats' spread (the preset's min / the swap's max up to the preset's max / the swap's min).
    swaps = [r for r in records if r["variant"] != "preset" and (r["system"], r["mode"], "preset", net_id(r)) in by]
    fig, ax = plt.subplots(figsize=(10, 0.42 * len(swaps) + 1.8))
    names = []
    for i, r in enumerate(swaps):
        base = by[(r["system"], r["mode"], "preset", net_id(r))]
        (bm, bl, bh), (sm, sl, sh) = step_stats(base), step_stats(r)
        x = bm / sm
        ax.barh(i, x - 1, left=1, xerr=None, color=COLOURS[r["system"]], edgecolor="black", linewidth=0.4)
        ax.errorbar(x, i, xerr=[[max(x - bl / sh, 0)], [max(bh / sl - x, 0)]], color="black", capsize=3)
        names.append(f"{r['system']} {r['mode']} {r['variant']} ({net_id(r)})")
    ax.axvline(1.0, color="black", linewidth=0.8)
    ax.set_xscale("log")  # 2x faster and 2x slower lie as far from 1
    log_axis(ax, "x")
    ax.set_yticks(range(len(names)), names, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("the preset's step / the swap's (> 1: the swap is faster; bars: repeats' spread)", fontsize=8)
    ax.set_title("One policy swapped: preset / swap, per step\n" + subtitle(records), fontsize=10)
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
