#!/usr/bin/python3
"""Samples the machine's contention while a measurement runs, until killed (SIGTERM), then writes JSON to OUT:
the mean over samples (every 0.2 s) of the other processes' runnable threads, each weighted by its nice value as
the kernel's scheduler weighs it (nice 0: 1, nice 5: 0.33, nice 10: 0.11), and the unweighted count. "Other":
not this measurement's own processes, named by --mine (command names, e.g. comm, paper_pytorch_l), nor this one.
The model (bench/paper/model.py) reads weighted_others_mean as the threads competing with the ranks for cores.

    contention.py OUT [--mine comm,orted,mpirun]
"""
import json
import os
import signal
import statistics
import sys
import time

out = sys.argv[1]
mine = set(sys.argv[3].split(",")) if len(sys.argv) > 3 and sys.argv[2] == "--mine" else set()
WEIGHT = [88761, 71755, 56483, 46273, 36291, 29154, 23254, 18705, 14949, 11916, 9548, 7620, 6100, 4904, 3906,
          3121, 2501, 1991, 1586, 1277, 1024, 820, 655, 526, 423, 335, 272, 215, 172, 137, 110, 87, 70, 56, 45,
          36, 29, 23, 18, 15]  # the kernel's sched_prio_to_weight, nice -20 .. 19
weighted, counted = [], []
stop = False


def on_term(*_):
    global stop
    stop = True


signal.signal(signal.SIGTERM, on_term)
me = os.getpid()
while not stop:
    w = c = 0.0
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == me:
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        name = stat[stat.index("(") + 1:stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2:].split()
        if fields[0] != "R" or name in mine:
            continue
        nice = int(fields[16])
        w += WEIGHT[nice + 20] / 1024
        c += 1
    weighted.append(w)
    counted.append(c)
    time.sleep(0.2)
with open(out, "w") as f:
    json.dump({"weighted_others_mean": statistics.fmean(weighted) if weighted else None,
               "others_running_mean": statistics.fmean(counted) if counted else None,
               "samples": len(weighted), "machine_cores": os.cpu_count(), "excluded": sorted(mine),
               "loadavg_after": open("/proc/loadavg").read().split()[:3]}, f, indent=1)
