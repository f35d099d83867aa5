"""Ratios to the update after backward, by where the vCPUs lay: summary.py FILE (ab3.sh's output)."""
import re, statistics, sys
rounds = {}
for line in open(sys.argv[1]):
    m = re.match(r"(\d+) \[(\d+) ns before\] (\w+) ([\d.]+)", line)
    if m:
        r = rounds.setdefault(int(m[1]), {"rt": int(m[2])})
        r[m[3]] = float(m[4])
for way in ("inside", "rows"):
    for place, test in (("far (>= 300 ns)", lambda rt: rt >= 300), ("near (< 300 ns)", lambda rt: rt < 300)):
        x = [r[way] / r["after"] for r in rounds.values() if test(r["rt"]) and way in r and "after" in r]
        if x:
            print(f"{way:6} {place:16} median {statistics.median(x):.3f}  rounds "
                  + ", ".join(f"{v:.3f}" for v in x))
