#!/usr/bin/env python3
"""Training on after a rank dies (elastic_main.cpp): the refusal without fault tolerance, and 3 -> 2 ranks.

    run_elastic.py --refuse -- mpiexec -n 2 ... elastic_main
    run_elastic.py --strategy ring|mpi -- mpiexec -n @NP@ ... elastic_main

--refuse runs `refuse` on the command's ranks, without fault tolerance: every rank must pass (each trainer
refuses options.elastic with a sentence). Otherwise, when this build's MPI has ULFM (`elastic_main ulfm`; else
exit 77, skipped, with the reason): `save DIR S` on 3 ranks, `resume DIR S` on 2, then `elastic DIR S` on 3
with `--with-ft ulfm` added after mpiexec, where rank 2 kills itself: the two survivors must pass. With
--strategy ps only the elastic run, on 4 ranks (3 workers and a server): the three survivors must pass. Removes DIR.
"""
import argparse
import re
import shutil
import subprocess
import sys
import tempfile

import run_resume  # its run(), beside this file


def run(command, timeout):
    return run_resume.run(command, timeout, "run_elastic")


def passes(output):
    return set(int(r) for r in re.findall(r"elastic: rank (\d+) passes", output))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--refuse", action="store_true")
    parser.add_argument("--strategy", choices=("ring", "mpi", "ps", "ps-server"))
    parser.add_argument("--timeout", type=float, default=90)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command and args.command[0] == "--" else args.command
    exe = next((c for c in reversed(command) if "elastic" in c), command[-1])  # the test program

    if args.refuse:
        output, code = run(command + ["refuse"], args.timeout)
        ranks = passes(output)
        if code != 0 or not ranks or "FAILS" in output:
            print(f"run_elastic: FAILED: the refusal run exited {code}, ranks passing {sorted(ranks)}")
            return 1
        print("run_elastic: every rank refused options.elastic with a sentence")
        return 0

    probe = subprocess.run([exe, "ulfm"], stdout=subprocess.PIPE, text=True)
    if "ulfm yes" not in probe.stdout:
        print("run_elastic: skipped: this build's MPI has no fault tolerance (ULFM), so a dead rank ends the job; "
              "training on after one dies is tested on Debian 13 (Open MPI 5), in CI's Debian 13 leg")
        return 77

    def with_ranks(n, ft=False):
        out = []
        for i, part in enumerate(command):
            out.append(str(n) if part == "@NP@" else part)
            if i == 0 and ft:
                out += ["--with-ft", "ulfm"]
        return out

    directory = tempfile.mkdtemp(prefix="sinew-test-elastic-")
    problems = []
    try:
        s = args.strategy
        if s == "ps-server":  # the server dies: the job must end, the workers naming it
            output, code = run(with_ranks(4, ft=True) + ["elastic", directory, s], args.timeout)
            if code is None:
                problems.append("the job hangs after its server died")
            elif code == 0:
                problems.append("the job exited 0 after its server died")
            if "server rank 3 died" not in output:
                problems.append("no worker names the dead server (\"server rank 3 died\")")
            if "trained on after their server died" in output:
                problems.append("the workers trained on without their server")
        elif s != "ps":  # a parameter server saves only between epochs: no reference run (elastic_main.cpp)
            _, code = run(with_ranks(3) + ["save", directory, s], args.timeout)
            if code != 0:
                problems.append(f"the saving run exited {code}")
            if not problems:
                _, code = run(with_ranks(2) + ["resume", directory, s], args.timeout)
                if code != 0:
                    problems.append(f"the resuming run exited {code}")
        if not problems and s != "ps-server":
            # The parameter server: 3 workers and the server (rank 3); worker rank 2 dies.
            output, code = run(with_ranks(4 if s == "ps" else 3, ft=True) + ["elastic", directory, s], args.timeout)
            if code is None:
                problems.append("the elastic run hangs")
            survivors = {0, 1, 3} if s == "ps" else {0, 1}
            ranks = passes(output)
            if ranks != survivors or "FAILS" in output:
                problems.append(f"the survivors passing are {sorted(ranks)}, not {sorted(survivors)}")
            if "rank 2 kills itself" not in output:
                problems.append("rank 2 did not kill itself")
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    for p in problems:
        print(f"run_elastic: FAILED: {p}")
    if not problems:
        print(f"run_elastic: {args.strategy}: the survivors trained on and ended where the resumed checkpoint ends")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
