#!/usr/bin/python3
"""Compile time of a few configurations, each one translation unit, with the build's own compiler and flags.

The commands come from the build's compile_commands.json (bench/compile_time/CMakeLists.txt exports them for the
compile_time_<config> object libraries), so the figures follow the build: Release flags, -march=native, the
dependencies' include directories. Each configuration is compiled --runs times, interleaved (round r compiles
every configuration once before round r + 1), and a JSON row per configuration (and header tree) gives the
median of its runs:
  {config, headers, compiler, flags, wall_s, user_s, max_rss_mb, commit, runs, samples}
--headers LABEL=DIR (repeatable) compiles the same commands against another include/ tree too (DIR replaces
this tree's include directory), interleaved with this one's, to compare two states of the headers on a busy
machine: e.g. --headers main=/path/to/main/include. LABEL=DIR@BUILD compiles against DIR with the commands of
another configured build (its flags: e.g. main's own build, to time a change of flags as well as of headers).
"""
import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time

CONFIGS = ["minimal", "sinew_hpp", "ring", "eigen", "resnet50_ring"]
SOURCE_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def load_commands(build):
    path = os.path.join(build, "compile_commands.json")
    if not os.path.exists(path):
        sys.exit(f"compile_time: {path} not found (configure the build with bench enabled: cmake --preset default)")
    commands = {}
    for entry in json.load(open(path)):
        args = entry.get("arguments") or shlex.split(entry["command"])
        output = args[args.index("-o") + 1] if "-o" in args else ""  # CMake < 3.20 writes no "output" key
        for config in CONFIGS:
            if f"compile_time_{config}.dir" in output:
                commands[config] = (entry["directory"], args)
    return commands


def strip_output(args):
    """The command without its -o FILE, -c SOURCE and dependency-file flags: what the row reports as flags."""
    flags, skip = [], False
    for a in args[1:]:
        if skip:
            skip = False
            continue
        if a in ("-o", "-c", "-MF", "-MT", "-MQ"):
            skip = True
            continue
        if a in ("-MD", "-MMD"):
            continue
        flags.append(a)
    return flags


def build_source_dir(build):
    """The source tree a configured build compiles (CMAKE_HOME_DIRECTORY in its CMakeCache.txt)."""
    with open(os.path.join(build, "CMakeCache.txt")) as f:
        for line in f:
            if line.startswith("CMAKE_HOME_DIRECTORY:"):
                return line.split("=", 1)[1].strip()
    sys.exit(f"compile_time: {build}/CMakeCache.txt names no CMAKE_HOME_DIRECTORY")


def with_headers(args, include_dir, source_dir=SOURCE_DIR):
    own = os.path.join(source_dir, "include")
    return [a.replace(own, include_dir) if a.startswith(("-I", "-isystem")) or a == own else a for a in args]


def compile_once(directory, args, out):
    """Wall, user and system seconds and the peak RSS (MiB) of the compiler and its children (cc1plus)."""
    args = list(args)
    for i, a in enumerate(args):
        if a == "-o":
            args[i + 1] = out
    args = [a for a in args if a not in ("-MD", "-MMD")]
    while "-MF" in args:
        i = args.index("-MF")
        del args[i:i + 2]
    with tempfile.TemporaryFile() as err:  # a file, not a pipe: a long diagnostic cannot block the compiler
        start = time.monotonic()
        proc = subprocess.Popen(args, cwd=directory, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)  # the rusage of the driver and of cc1plus, which it waited for
        wall = time.monotonic() - start
        proc.returncode = code = os.waitstatus_to_exitcode(status)
        if code != 0:
            err.seek(0)
            sys.exit(f"compile_time: compiling failed (exit {code}):\n{shlex.join(args)}\n"
                     f"{err.read().decode(errors='replace')}")
    return wall, usage.ru_utime, usage.ru_stime, usage.ru_maxrss / 1024.0


def git_commit(path):
    try:
        return subprocess.run(["git", "-C", path, "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              check=True).stdout.strip() + ("-dirty" if subprocess.run(
                                  ["git", "-C", path, "status", "--porcelain", "--", "."], capture_output=True,
                                  text=True).stdout.strip() else "")
    except (subprocess.CalledProcessError, FileNotFoundError):
        return ""


def compiler_version(compiler):
    out = subprocess.run([compiler, "--version"], capture_output=True, text=True).stdout
    return out.splitlines()[0] if out else compiler


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", default=os.path.join(SOURCE_DIR, "build"), help="the configured build directory")
    p.add_argument("--configs", default=",".join(CONFIGS), help="comma-separated, of " + ",".join(CONFIGS))
    p.add_argument("--runs", type=int, default=3, help="interleaved runs per configuration (median reported)")
    p.add_argument("--headers", action="append", default=[], metavar="LABEL=DIR",
                   help="also compile against another include/ tree (DIR@BUILD: with that build's commands), "
                        "interleaved")
    p.add_argument("--json", help="write the rows here (default: stdout only)")
    a = p.parse_args()

    commands = load_commands(a.build)
    configs = [c for c in a.configs.split(",") if c]
    for c in configs:
        if c not in commands:
            sys.exit(f"compile_time: no command for {c} in {a.build}/compile_commands.json "
                     f"(known: {', '.join(sorted(commands)) or 'none'}; is SINEW_BUILD_BENCH on?)")
    trees = [("this", os.path.join(SOURCE_DIR, "include"))]
    tree_commands = {"this": (commands, SOURCE_DIR)}
    for h in a.headers:
        label, _, path = h.partition("=")
        path, _, build = path.partition("@")
        if not path or not os.path.isdir(path):
            sys.exit(f"compile_time: --headers {h}: expected LABEL=DIR or LABEL=DIR@BUILD with DIR an include/ tree")
        trees.append((label, os.path.abspath(path)))
        tree_commands[label] = (load_commands(build), build_source_dir(build)) if build else (commands, SOURCE_DIR)
        for c in configs:
            if c not in tree_commands[label][0]:
                sys.exit(f"compile_time: --headers {h}: no command for {c} in {build}/compile_commands.json")

    samples = {(c, label): [] for c in configs for label, _ in trees}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(a.runs):
            for c in configs:
                for label, tree in trees:
                    cmds, source = tree_commands[label]
                    directory, args = cmds[c]
                    s = compile_once(directory, with_headers(args, tree, source), os.path.join(tmp, c + ".o"))
                    samples[(c, label)].append(s)
                    print(f"run {r + 1}/{a.runs} {c:<14} {label:<8} wall {s[0]:6.2f} s  user {s[1]:6.2f} s  "
                          f"rss {s[3]:6.0f} MiB", file=sys.stderr, flush=True)

    rows = []
    for c in configs:
        for label, tree in trees:
            cmds, source = tree_commands[label]
            directory, args = cmds[c]
            runs = samples[(c, label)]
            rows.append({
                "config": c,
                "headers": label,
                "compiler": compiler_version(args[0]),
                "flags": shlex.join(strip_output(with_headers(args, tree, source))),
                "wall_s": round(statistics.median(s[0] for s in runs), 2),
                "user_s": round(statistics.median(s[1] for s in runs), 2),
                "max_rss_mb": round(statistics.median(s[3] for s in runs)),
                "commit": git_commit(os.path.dirname(tree)),
                "runs": len(runs),
                "samples": [{"wall_s": round(s[0], 2), "user_s": round(s[1], 2), "sys_s": round(s[2], 2),
                             "max_rss_mb": round(s[3])} for s in runs],
            })
    text = json.dumps(rows, indent=1)
    if a.json:
        with open(a.json, "w") as f:
            f.write(text + "\n")
    print(text)
    print(f"{'config':<14} {'headers':<8} {'wall s':>7} {'user s':>7} {'RSS MiB':>8}", file=sys.stderr)
    for row in rows:
        print(f"{row['config']:<14} {row['headers']:<8} {row['wall_s']:7.2f} {row['user_s']:7.2f} "
              f"{row['max_rss_mb']:8d}", file=sys.stderr)


if __name__ == "__main__":
    main()
