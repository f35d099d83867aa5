#!/usr/bin/env python3
"""Preempts a run with a signal, then resumes it: it must end bit for bit where the run that was not stopped ends.

    run_preempt.py --strategy ring|ps --cases one,all,before,between -- mpiexec -n 3 ... resume_ranks_main

In a new temporary directory DIR: runs the command with `reference DIR S` (must exit 0); then for each case
`preempt DIR S CASE`, which must exit with status 75 (sinew::preempted's, passed on by mpiexec) with every rank
saying "resume_ranks: rank R preempted", and `continue DIR S CASE`, which must exit 0 with every rank passing.
In the case `all` this script sends mpiexec SIGUSR1 twice, 150 ms apart, when rank 0 prints "signal now" (Open
MPI's mpirun forwards SIGUSR1 and SIGUSR2 to every rank; SIGTERM would end the job). Removes DIR.
"""
import argparse
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

RANKS = 3
PREEMPTED = 75  # EX_TEMPFAIL: sinew::preempted::kExitStatus


def run(command, timeout, signal_on=None):
    started = time.time()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    lines = []

    def read():
        for raw in process.stdout:
            line = raw.decode(errors="replace")
            lines.append(line)
            if signal_on and signal_on in line:
                process.send_signal(signal.SIGUSR1)
                time.sleep(0.15)
                process.send_signal(signal.SIGUSR1)  # a second one, about while the ranks save or exit

    reader = threading.Thread(target=read)
    reader.start()
    try:
        code = process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        code = None
    reader.join()
    output = "".join(lines) + ("" if code is not None else f"\n(killed after {timeout} s: it hangs)")
    print(output)
    print(f"run_preempt: {' '.join(command[-4:])}: exit code {code}, {time.time() - started:.2f} s")
    return output, code


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--strategy", required=True)
    parser.add_argument("--cases", required=True)
    parser.add_argument("--timeout", type=float, default=60)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command and args.command[0] == "--" else args.command
    s = args.strategy

    problems = []
    directory = tempfile.mkdtemp(prefix="sinew-test-preempt-")
    try:
        output, code = run(command + ["reference", directory, s], args.timeout)
        if code != 0:
            problems.append(f"the reference run exited with {code}")
        for case in args.cases.split(",") if not problems else []:
            output, code = run(command + ["preempt", directory, s, case], args.timeout,
                               signal_on="resume_ranks: signal now" if case == "all" else None)
            if code != PREEMPTED:
                problems.append(f"{s}-{case}: the preempted run exited with {code}, not {PREEMPTED}")
            for r in range(RANKS):
                if f"resume_ranks: rank {r} preempted: trainer: preempted by" not in output:
                    problems.append(f"{s}-{case}: rank {r} did not leave through sinew::preempted")
            if problems:
                break
            output, code = run(command + ["continue", directory, s, case], args.timeout)
            if code != 0:
                problems.append(f"{s}-{case}: the continued run exited with {code}")
            for r in range(RANKS):
                if f"resume_ranks: rank {r} passes" not in output:
                    problems.append(f"{s}-{case}: rank {r} of the continued run did not pass")
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    for p in problems:
        print(f"run_preempt: FAIL: {p}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
