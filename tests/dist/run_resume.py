#!/usr/bin/env python3
"""Kills a rank of a run that saved checkpoints, then resumes them on another number of ranks.

    run_resume.py --save-ranks W --resume-ranks W2 -- mpiexec -n @NP@ ... resume_ranks_main

Runs the command with @NP@ = W and the arguments `save DIR W2` (DIR a new temporary directory): the job must
end non-zero with the killed rank named ("rank W-1 ... exited on signal 9") and leave DIR/ring/checkpoint.json.
Then runs it with @NP@ = W2 and `resume DIR`: it must exit 0 with every rank passing. Removes DIR.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time


def run(command, timeout, who="run_resume"):
    """Runs `command` (killed after `timeout` s: then the code is None), prints its output and a line naming it;
    returns (output, exit code). run_elastic.py uses it too."""
    started = time.time()
    try:
        done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout)
        output, code = done.stdout.decode(errors="replace"), done.returncode
    except subprocess.TimeoutExpired as e:
        output, code = (e.stdout or b"").decode(errors="replace") + f"\n(killed after {timeout} s: it hangs)", None
    print(output)
    print(f"{who}: {' '.join(command[-3:])}: exit code {code}, {time.time() - started:.2f} s", flush=True)
    return output, code


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--save-ranks", type=int, required=True)
    parser.add_argument("--resume-ranks", type=int, required=True)
    parser.add_argument("--kill-after", type=float, default=60)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command and args.command[0] == "--" else args.command

    def with_ranks(n):
        return [str(n) if part == "@NP@" else part for part in command]

    problems = []
    directory = tempfile.mkdtemp(prefix="sinew-test-resume-ranks-")
    try:
        output, code = run(with_ranks(args.save_ranks) + ["save", directory, str(args.resume_ranks)], args.kill_after)
        killed = args.save_ranks - 1
        if code == 0 or code is None:
            problems.append(f"the saving job exited with {code}, not with the killed rank's failure")
        # Open MPI 4.1's mpirun says it on one line; Open MPI 5's prterun breaks the line after "exited on".
        if not re.search(rf"rank {killed} .*exited on\s+signal 9", output):
            problems.append(f"the saving job's output does not name rank {killed} as killed by signal 9")
        for name in ("ps", "ring", "ring-odd"):
            if not os.path.exists(os.path.join(directory, name, "checkpoint.json")):
                problems.append(f"the saving job left no checkpoint {name}")
        if not problems:
            output, code = run(with_ranks(args.resume_ranks) + ["resume", directory], args.kill_after)
            if code != 0:
                problems.append(f"the resuming job exited with {code}")
            for r in range(args.resume_ranks):
                if f"resume_ranks: rank {r} passes" not in output:
                    problems.append(f"rank {r} of the resuming job did not pass")
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    for p in problems:
        print(f"run_resume: FAIL: {p}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
