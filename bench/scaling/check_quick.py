#!/usr/bin/python3
"""Runs bench/paper/scaling.py --quick or time_to_accuracy.py --quick, then checks what it wrote: the JSON's
content (every run present and measured, the linear limits and the target summary consistent with the points)
and every figure a non-empty PNG or SVG. The CI smoke tests of bench/scaling/CMakeLists.txt.

    /usr/bin/python3 bench/scaling/check_quick.py scaling|time_to_accuracy OUT_DIR [SCRIPT OPTIONS...]

The script's output goes to OUT_DIR.log (printed when it fails); its exit status 77 (no matplotlib) is passed on.
"""

import json
import os
import subprocess
import sys

PAPER = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "paper")

failures = []


def expect(ok, what):
    if not ok:
        failures.append(what)
    return ok


def figures(out, doc, names):
    expect(sorted(doc.get("figures", [])) == sorted(names), f"figures listed {doc.get('figures')}, expected {names}")
    for name in names:
        path = os.path.join(out, name)
        if not expect(os.path.isfile(path), f"{name} missing"):
            continue
        with open(path, "rb") as f:
            head = f.read()
        if name.endswith(".png"):
            expect(head.startswith(b"\x89PNG\r\n\x1a\n") and len(head) > 10000, f"{name} is no PNG with a plot")
        else:
            expect(b"<svg" in head and head.count(b"<path") > 10, f"{name} is no SVG with a plot")


def check_scaling(out):
    doc = json.load(open(os.path.join(out, "scaling.json")))
    s, place = doc["settings"], doc["placement"]
    expect(doc["failed_runs"] == 0, f"{doc['failed_runs']} failed runs")
    expect(s["quick"] and s["net"] == "lenet5", "settings do not say --quick with LeNet-5")
    cores = doc["machine"]["cores"]
    expect(place["oversubscribed"] == (place["largest_run_ranks"] * place["threads_per_rank"] > cores),
           "placement.oversubscribed disagrees with ranks x threads against the cores")
    expect(place["largest_run_ranks"] == max(s["workers"]) + 1, "the largest run is not workers + 1 server")
    expect(("Oversubscribed" in doc["note"]) == place["oversubscribed"], "the note does not say the placement")
    pairs = sorted((r["config"], r["workers"]) for r in doc["runs"])
    expect(pairs == sorted((c, w) for c in s["configs"] for w in s["workers"]), f"runs {pairs}")
    one = {r["config"]: r["images_per_second"] for r in doc["runs"] if r["workers"] == 1}
    for r in doc["runs"]:
        expect(r["images_per_second"] > 0, f"{r['config']} {r['workers']}: no images/s")
        expect(r["ranks"] == r["workers"] + (1 if r["config"].startswith("ps-") else 0), f"{r}: ranks")
        expect(abs(r["linear_limit"] - r["workers"] * one[r["config"]]) < 1e-6 * r["linear_limit"],
               f"{r['config']} {r['workers']}: linear limit is not workers x the 1-worker rate")
        expect(abs(r["efficiency"] - r["images_per_second"] / r["linear_limit"]) < 1e-9, "efficiency")
        phases = r["seconds_per_step"]
        expect(phases["forward"] > 0 and phases["backward"] > 0, f"{r['config']} {r['workers']}: no phases")
    sweep = sorted((r["config"], r["batch"]) for r in doc["sweep"])
    expect(sweep == sorted((c, b) for c in s["configs"] for b in s["sweep_batches"]), f"sweep {sweep}")
    expect(all(r["workers"] == s["sweep_workers"] and r["images_per_second"] > 0 for r in doc["sweep"]),
           "a sweep run at another number of workers or without images/s")
    figures(out, doc, ["scaling.png", "scaling.svg", "scaling_batch.png", "scaling_batch.svg"])


def check_time_to_accuracy(out):
    doc = json.load(open(os.path.join(out, "time_to_accuracy.json")))
    s = doc["settings"]
    expect(doc["failed_runs"] == 0, f"{doc['failed_runs']} failed runs")
    expect(doc["data"]["generated"] and "GENERATED" in doc["data"]["note"], "generated data not said")
    expect(sorted(r["config"] for r in doc["runs"]) == sorted(s["configs"]) and len(s["configs"]) == 4,
           "not one run per configuration, all four")
    for r in doc["runs"]:
        pts = r["points"]
        name = f"{r['net']} {r['config']}"
        expect([p["epoch"] for p in pts] == list(range(s["max_epochs"] + 1)), f"{name}: epochs {pts}")
        expect(pts[0]["seconds"] == 0 and all(a["seconds"] < b["seconds"] for a, b in zip(pts, pts[1:])),
               f"{name}: training seconds do not rise from 0")
        expect(all(0 <= p["accuracy"] <= 1 for p in pts), f"{name}: accuracy outside [0, 1]")
        expect(max(p["accuracy"] for p in pts[1:]) > 0.3, f"{name}: learnt nothing on learnable data")
        expect(r["ranks"] == s["workers"] + (1 if r["config"].startswith("ps-") else 0), f"{name}: ranks")
        reached = [p for p in pts if p["accuracy"] >= r["target"]]
        expect(r["time_to_target"] == (reached[0]["seconds"] if reached else None), f"{name}: time to target")
    for summary in doc["summary"]:
        done = [r for r in doc["runs"] if r["net"] == summary["net"] and r["time_to_target"] is not None]
        first = min(done, key=lambda r: r["time_to_target"])["config"] if done else None
        expect(summary["first"] == first, f"summary names {summary['first']} first, the points say {first}")
        expect(summary["sentence"].startswith("LeNet-5:") and f"{100 * summary['target']:.0f}%" in
               summary["sentence"], f"summary sentence {summary['sentence']!r}")
    figures(out, doc, ["time_to_accuracy.png", "time_to_accuracy.svg"])


def main():
    if len(sys.argv) < 3 or sys.argv[1] not in ("scaling", "time_to_accuracy"):
        sys.exit(__doc__)
    kind, out = sys.argv[1], sys.argv[2]
    script = [sys.executable, os.path.join(PAPER, kind + ".py"), "--quick", "--out", out] + sys.argv[3:]
    with open(out + ".log", "w") as log:
        status = subprocess.run(script, stdout=log, stderr=subprocess.STDOUT).returncode
    if status != 0:
        sys.stdout.write(open(out + ".log").read())
        print(f"check_quick: {' '.join(script)} exited with {status}")
        return status
    (check_scaling if sys.argv[1] == "scaling" else check_time_to_accuracy)(sys.argv[2])
    for f in failures:
        print("check_quick:", f, file=sys.stderr)
    print(f"check_quick: {sys.argv[1]}: {'FAILED' if failures else 'all checks passed'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
