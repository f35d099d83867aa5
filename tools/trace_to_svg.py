#!/usr/bin/env python3
"""Draws one training step of a sinew Chrome trace (Trainer::write_trace, --trace FILE) as SVG, or as PNG.

    tools/trace_to_svg.py trace.json step.svg [--step N]     # SVG with Python's standard library only
    tools/trace_to_svg.py trace.json step.png [--step N]     # PNG through matplotlib (python3-matplotlib)

One row group per track: each rank's training thread (the step, its phases below it, the layers, hooks, the
wait and the update below those) and each rank's communication channels (every bucket's all-reduce from start
to finish). Colored by phase; the time axis is in milliseconds from the step's earliest start on any rank.
Without --step, the step whose longest duration over the ranks is the median of the trace's steps.
Perfetto (ui.perfetto.dev) or chrome://tracing open the trace itself; this is for a picture in a note.
"""
import argparse
import json
import statistics
import sys
from xml.sax.saxutils import escape

COLORS = {
    "step": "#d9d9d9",
    "load": "#8c8c8c",
    "forward": "#9ecae1",
    "layer_forward": "#3182bd",
    "loss_check": "#c994c7",
    "backward": "#fdd0a2",
    "layer_backward": "#e6550d",
    "overlap_hook": "#de2d26",
    "strategy_update": "#c7e9c0",
    "wait": "#fb6a4a",
    "update": "#31a354",
    "allreduce": "#756bb1",
}
# The nesting depth of each kind on the training thread.
DEPTH = {"step": 0, "load": 1, "forward": 1, "backward": 1, "strategy_update": 1,
         "layer_forward": 2, "layer_backward": 2, "loss_check": 2, "overlap_hook": 2, "wait": 2, "update": 2}
ROW, GAP, LEFT, WIDTH, TOP = 22, 10, 190, 1400, 40


def load(path):
    try:
        with open(path) as f:
            trace = json.load(f)
    except (OSError, json.JSONDecodeError) as e:
        sys.exit(f"trace_to_svg: cannot read {path} as JSON: {e}")
    if "traceEvents" not in trace:
        sys.exit(f"trace_to_svg: {path} has no traceEvents: not a Chrome trace (write one with --trace FILE)")
    return trace


def pick_step(events, wanted):
    steps = {}
    for e in events:
        if e.get("cat") == "step":
            steps[e["args"]["step"]] = max(steps.get(e["args"]["step"], 0), e["dur"])
    if not steps:
        sys.exit("trace_to_svg: the trace has no step events (was training traced?)")
    if wanted is not None:
        if wanted not in steps:
            sys.exit(f"trace_to_svg: no step {wanted} in the trace; it has steps {min(steps)} to {max(steps)}")
        return wanted
    median = statistics.median_low(steps.values())
    return min(s for s, d in steps.items() if d == median)


def layout(trace, step):
    """Rectangles (x0_ms, x1_ms, row, kind, label) and row labels [(row, text)], for one step."""
    names = {}
    for e in trace["traceEvents"]:
        if e.get("ph") == "M" and e["name"] in ("process_name", "thread_name"):
            names[(e["pid"], e["tid"] if e["name"] == "thread_name" else None)] = e["args"]["name"]
    events = [e for e in trace["traceEvents"] if e.get("ph") == "X" and e["args"].get("step") == step]
    origin = min(e["ts"] for e in events)
    tracks = sorted({(e["pid"], e["tid"]) for e in events})
    rects, labels, row = [], [], 0
    for pid, tid in tracks:
        process = names.get((pid, None), f"rank {pid}")
        thread = names.get((pid, tid), f"thread {tid}")
        depths = 3 if tid == 0 else 1
        labels.append((row, f"{process}: {thread}", depths))
        for e in events:
            if (e["pid"], e["tid"]) != (pid, tid):
                continue
            depth = DEPTH.get(e["cat"], 0) if tid == 0 else 0
            rects.append(((e["ts"] - origin) / 1e3, (e["ts"] + e["dur"] - origin) / 1e3, row + depth, e["cat"],
                          e["name"]))
        row += depths
    # The optimizer's update pieces lie inside the wait, at the same depth: draw them on top.
    rects.sort(key=lambda r: r[3] == "update")
    return rects, labels, row


def y_of(row, labels):
    """Rows of one track are ROW apart; tracks are GAP apart."""
    gaps = sum(1 for start, _, _ in labels if start <= row) - 1
    return TOP + row * ROW + gaps * GAP


def svg(rects, labels, rows, title):
    end = max(r[1] for r in rects)
    scale = (WIDTH - LEFT - 20) / end
    height = y_of(rows - 1, labels) + ROW + 70
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
           f'font-family="sans-serif" font-size="11">',
           f'<rect width="100%" height="100%" fill="white"/>',
           f'<text x="10" y="20" font-size="14">{escape(title)}</text>']
    for start, text, _ in labels:
        out.append(f'<text x="10" y="{y_of(start, labels) + 15}">{escape(text)}</text>')
    for x0, x1, row, kind, name in rects:
        x, w, y = LEFT + x0 * scale, max((x1 - x0) * scale, 0.5), y_of(row, labels)
        out.append(f'<rect x="{x:.2f}" y="{y}" width="{w:.2f}" height="{ROW - 2}" fill="{COLORS.get(kind, "#bbb")}" '
                   f'stroke="white" stroke-width="0.3"><title>{escape(name)}: {x1 - x0:.3f} ms</title></rect>')
        if w > 7 * len(name):
            out.append(f'<text x="{x + 2:.2f}" y="{y + 14}" font-size="10">{escape(name)}</text>')
    axis = y_of(rows - 1, labels) + ROW + 8
    tick = next(t for t in (0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000) if end / t <= 12)
    t = 0.0
    while t <= end:
        x = LEFT + t * scale
        out.append(f'<line x1="{x:.2f}" y1="{TOP - 4}" x2="{x:.2f}" y2="{axis}" stroke="#eee"/>')
        out.append(f'<text x="{x:.2f}" y="{axis + 12}" text-anchor="middle">{t:g} ms</text>')
        t += tick
    x = LEFT
    for kind, color in COLORS.items():
        out.append(f'<rect x="{x}" y="{axis + 24}" width="12" height="12" fill="{color}"/>')
        out.append(f'<text x="{x + 15}" y="{axis + 34}">{kind}</text>')
        x += 20 + 7 * len(kind)
    out.append("</svg>")
    return "\n".join(out)


def png(rects, labels, rows, title, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.patches import Patch
    except ImportError:
        sys.exit("trace_to_svg: a PNG needs matplotlib (Debian's python3-matplotlib); write an .svg instead")
    fig, ax = plt.subplots(figsize=(16, 0.32 * rows + 1.8))
    ypos = {row: -(y_of(row, labels) - TOP) / ROW for row in range(rows)}
    for x0, x1, row, kind, name in rects:
        ax.barh(ypos[row], max(x1 - x0, 1e-3), left=x0, height=0.9, color=COLORS.get(kind, "#bbb"),
                edgecolor="white", linewidth=0.3)
    ax.set_yticks([ypos[start] for start, _, _ in labels], [text for _, text, _ in labels], fontsize=8)
    ax.set_xlabel("ms from the step's start")
    ax.set_title(title, fontsize=10)
    legend = 0.55 / (0.32 * rows + 1.8)  # the figure's fraction the legend takes at the bottom
    fig.legend(handles=[Patch(color=c, label=k) for k, c in COLORS.items()], ncol=12, fontsize=7,
               loc="lower center")
    fig.tight_layout(rect=(0, legend, 1, 1))
    fig.savefig(path, dpi=110)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("trace", help="a Chrome trace written by sinew (--trace FILE)")
    p.add_argument("out", help="the picture: .svg (standard library) or .png (matplotlib)")
    p.add_argument("--step", type=int, help="the step to draw (default: the median step)")
    p.add_argument("--title", help="the picture's title (default: the trace's strategy and step)")
    a = p.parse_args()
    trace = load(a.trace)
    step = pick_step(trace["traceEvents"], a.step)
    rects, labels, rows = layout(trace, step)
    other = trace.get("otherData", {})
    title = a.title or f"{other.get('strategy', 'sinew')}: step {step} (spans {max(r[1] for r in rects):.1f} ms over the ranks)"
    if a.out.endswith(".png"):
        png(rects, labels, rows, title, a.out)
    else:
        with open(a.out, "w") as f:
            f.write(svg(rects, labels, rows, title))


if __name__ == "__main__":
    main()
