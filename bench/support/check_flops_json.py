#!/usr/bin/python3
"""Checks a bench JSON's flop columns (bench_lenet5_quick): each row's GFLOP/s is 6 x its forward multiply-adds
per image x its images/s, its peak was measured (a positive GFLOP/s), and its share is the quotient of the two.

Usage: check_flops_json.py FILE MACS   (MACS: the network's forward multiply-adds per image, counted by hand)
"""
import json
import math
import sys


def main() -> int:
    path, macs = sys.argv[1], float(sys.argv[2])
    rows = json.load(open(path))
    if not rows:
        print(f"{path}: no rows")
        return 1
    for r in rows:
        where = f"{path}: batch {r['batch']} {r['precision']}"
        if r["forward_macs_per_image"] != macs:
            print(f"{where}: forward_macs_per_image {r['forward_macs_per_image']}, counted by hand {macs}")
            return 1
        want = 6 * macs * r["images_per_second"] / 1e9
        if not (r["images_per_second"] > 0 and math.isclose(r["gflops"], want, rel_tol=1e-9)):
            print(f"{where}: gflops {r['gflops']}, 6 x MACs x images/s gives {want}")
            return 1
        if not (r["peak_gflops"] and r["peak_gflops"] > 0):
            print(f"{where}: no measured peak ({r['peak_gflops']})")
            return 1
        if not math.isclose(r["share_of_peak"], r["gflops"] / r["peak_gflops"], rel_tol=1e-9):
            print(f"{where}: share_of_peak {r['share_of_peak']} is not gflops / peak_gflops")
            return 1
    print(f"{path}: {len(rows)} rows, GFLOP/s and share of peak consistent")
    return 0


if __name__ == "__main__":
    sys.exit(main())
