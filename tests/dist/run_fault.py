#!/usr/bin/env python3
"""Runs one fault case of failure_main under mpiexec and checks how the job ended.

    run_fault.py --bound SECONDS --expect REGEX [--expect REGEX ...] -- mpiexec ... failure_main STRATEGY FAULT

Passes when the job exits non-zero, its output matches every --expect (a regular expression, searched in
stdout and stderr together), no rank printed "trained without failing", and the job ended within --bound
seconds of the moment the failing rank announced its fault ("failure_main: rank R faults at T"). Prints the
measured time to exit, so that CI logs show it. A job that runs past --kill-after is killed and fails: the
case must end by itself.
"""
import argparse
import re
import subprocess
import sys
import time


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bound", type=float, required=True)
    parser.add_argument("--expect", action="append", default=[])
    parser.add_argument("--kill-after", type=float, default=50)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command and args.command[0] == "--" else args.command

    started = time.time()
    try:
        done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=args.kill_after)
        output, code = done.stdout.decode(errors="replace"), done.returncode
    except subprocess.TimeoutExpired as e:
        output = (e.stdout or b"").decode(errors="replace")
        print(output)
        print(f"run_fault: FAIL: the job still ran after {args.kill_after:g} s (it hangs)")
        return 1
    ended = time.time()
    print(output)

    problems = []
    if code == 0:
        problems.append("the job exited with code 0")
    if "trained without failing" in output:
        problems.append("a rank trained without failing")
    for pattern in args.expect:
        if not re.search(pattern, output):
            problems.append(f"no match for {pattern!r}")
    faults = [float(t) for t in re.findall(r"failure_main: rank \d+ faults at ([0-9.]+)", output)]
    if faults:
        elapsed = ended - min(faults)
        where = "after the fault"
    else:
        elapsed = ended - started
        where = "after the start (no fault was announced)"
        problems.append("the failing rank announced no fault")
    print(f"run_fault: the job ended with exit code {code}, {elapsed:.2f} s {where} "
          f"(bound {args.bound:g} s, whole job {ended - started:.2f} s)")
    if elapsed > args.bound:
        problems.append(f"it took {elapsed:.2f} s, more than the bound of {args.bound:g} s")
    for p in problems:
        print(f"run_fault: FAIL: {p}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
