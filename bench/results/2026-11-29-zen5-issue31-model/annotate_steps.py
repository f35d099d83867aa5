#!/usr/bin/python3
"""Merges the LeNet-5 step runs' repeats (RUNS/SYSTEM-HxK-LINK-rN.json, written by paper_SYSTEM_lenet5_cifar10 under
scripts/cluster) into one record per configuration with the fields of /work/h37/schema.md the model reads
(placement, link, schedule, parameters, step_seconds with its repeats; placement's background_threads_per_host
from the runs' contention.py samples): run_matrix.py --hosts does not exist yet on
this branch. The link is the shaped one as the model reads emulated links (model.emulated_link).

    /usr/bin/python3 annotate_steps.py RUNS OUT
"""
import glob
import json
import os
import re
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "paper"))
import model  # noqa: E402

runs, out = sys.argv[1:3]
groups = {}
for f in sorted(glob.glob(os.path.join(runs, "*-r[0-9].json"))):
    m = re.fullmatch(r"(\w+)-(\d+)x(\d+)-(\w+)-r\d\.json", os.path.basename(f))
    if m:
        rec = json.load(open(f))
        rec["_load"] = f[:-len(".json")] + ".load.json"
        groups.setdefault(m.groups(), []).append(rec)
os.makedirs(out, exist_ok=True)
for (system, hosts, per_host, link_name), reps in groups.items():
    hosts, per_host = int(hosts), int(per_host)
    r = {k: v for k, v in reps[0].items() if k != "_load"}
    p = hosts * per_host
    steps = [x["time_per_epoch_seconds"] / x["steps_per_epoch"] for x in reps]
    phases = [{k: v / x["steps_per_epoch"] for k, v in x["phases_seconds_per_epoch"].items()} for x in reps]
    sent = r.get("gradient_bytes_per_step")
    r["parameters"] = round(sent * p / (2 * (p - 1)) / 4) if sent and p > 1 else None
    running = []
    for x in reps:
        if os.path.exists(x["_load"]):
            running.append(json.load(open(x["_load"]))["weighted_others_mean"])
    # Other processes' runnable threads meanwhile (contention.py), spread over the emulated hosts as the cores are.
    background = statistics.median(running) / hosts if running else None
    r["placement"] = {"hosts": hosts, "workers_per_host": per_host, "servers_per_host": 0,
                      "cores_per_host": 2 / hosts, "threads_per_rank": 1,
                      "binding": "none: the emulated hosts share the machine's 2 cores", "emulated": hosts > 1,
                      "background_threads_per_host": background}
    link = model.emulated_link(link_name)
    r["link"] = {"name": link_name,
                 "rate_bits_per_second": None if link_name == "none" else model.rate_bytes_per_second(link_name) * 8,
                 "alpha_seconds": link.alpha, "beta_seconds_per_byte": link.beta, "burst_bytes": link.burst}
    r["schedule"] = {"kind": model.SCHEDULE_OF_STRATEGY.get(r["strategy"], r["strategy"]), "sync": r["mode"],
                     "servers": r.get("servers") or 0,
                     "bucket_bytes": 25 << 20 if system == "pytorch" else None, "compression": "none",
                     "bytes_on_wire_per_step": sent}
    r["repeats"] = [{"step_seconds": s, "phases_seconds_per_step": ph} for s, ph in zip(steps, phases)]
    r["step_seconds"] = {"median": statistics.median(steps), "min": min(steps), "max": max(steps), "repeats": steps}
    r["phases_seconds_per_step"] = {k: statistics.median(ph[k] for ph in phases) for k in phases[0]}
    name = f"{system}-{r['mode']}-preset-lenet5_cifar10-{hosts}x{per_host}-{link_name}.json"
    with open(os.path.join(out, name), "w") as f:
        json.dump(r, f, indent=1)
    print(name, f"{1e3 * r['step_seconds']['median']:.2f} ms a step ({1e3 * min(steps):.2f}-{1e3 * max(steps):.2f})")
