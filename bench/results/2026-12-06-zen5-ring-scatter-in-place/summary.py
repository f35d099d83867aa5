"""Medians of run.sh's rounds: images/s, exposed share and ms, update ms, per build; new/old per round."""
import json, statistics, sys, glob, os
here = os.path.dirname(os.path.abspath(__file__))
prefix = sys.argv[1] if len(sys.argv) > 1 else ""
rows = {}
for v in ("old", "new"):
    rows[v] = []
    r = 1
    while os.path.exists(f"{here}/{prefix}{v}-r{r}.json"):
        d = json.load(open(f"{here}/{prefix}{v}-r{r}.json"))[0]
        s = d["seconds_per_step"]
        rows[v].append((d["images_per_second"], 100 * d["exposed_comm_share"], 1e3 * s["comm_exposed"],
                        1e3 * s["update"], max(d["core_round_trip_ns"])))
        r += 1
print("round  old img/s exposed% ms  update ms trip |  new img/s exposed% ms  update ms trip | new/old img/s")
for i, (o, n) in enumerate(zip(rows["old"], rows["new"]), 1):
    print(f"{i:5d}  {o[0]:9.1f} {o[1]:8.2f} {o[2]:4.2f} {o[3]:9.2f} {o[4]:4.0f} |  {n[0]:9.1f} {n[1]:8.2f} {n[2]:4.2f}"
          f" {n[3]:9.2f} {n[4]:4.0f} | {n[0] / o[0]:.3f}")
med = lambda v, k: statistics.median(x[k] for x in rows[v])
ratios = [n[0] / o[0] for o, n in zip(rows["old"], rows["new"])]
print(f"median old: {med('old', 0):.1f} img/s, exposed {med('old', 1):.2f}% ({med('old', 2):.2f} ms), update "
      f"{med('old', 3):.2f} ms")
print(f"median new: {med('new', 0):.1f} img/s, exposed {med('new', 1):.2f}% ({med('new', 2):.2f} ms), update "
      f"{med('new', 3):.2f} ms")
print(f"new/old images/s: median {statistics.median(ratios):.3f} (min {min(ratios):.3f}, max {max(ratios):.3f})")
