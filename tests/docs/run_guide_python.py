#!/usr/bin/env python3
"""Runs the ```python blocks of docs/guide.md, in order and in one namespace, in a directory holding
lenet5.safetensors (LeNet-5 on 3x32x32 with 10 classes, written by `guide_blocks --write-weights`), then checks
that the guide's read_safetensors returned every tensor with sinew's values. A block that imports a module
this Python lacks (torch, torchvision: scripts/install-deps --bench) is skipped with a message. Exit 77 (skip)
where numpy, which the reader needs, is missing."""
import argparse
import os
import re
import subprocess
import sys


def blocks(guide):
    """(line of the fence, code) for every ```python block."""
    with open(guide, encoding="utf-8") as f:
        lines = f.read().split("\n")
    out, i = [], 0
    while i < len(lines):
        if re.fullmatch(r"```python\s*", lines[i]):
            start, i = i + 1, i + 1
            while i < len(lines) and not re.fullmatch(r"```\s*", lines[i]):
                i += 1
            out.append((start, "\n".join(lines[start:i])))
        i += 1
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--guide", required=True)
    ap.add_argument("--writer", required=True)
    ap.add_argument("--dir", required=True)
    args = ap.parse_args()
    try:
        import numpy as np
    except ImportError:
        print("skipped: the guide's Python needs numpy (apt-get install python3-numpy)")
        return 77
    os.makedirs(args.dir, exist_ok=True)
    os.chdir(args.dir)
    listing = subprocess.run([args.writer, "--write-weights", "lenet5.safetensors"], check=True,
                             capture_output=True, text=True).stdout.split("\n")
    expected = [(k, int(o), int(n)) for k, o, n in (line.split() for line in listing if line)]

    found = blocks(args.guide)
    if not found:
        print(f"{args.guide}: no ```python block")
        return 1
    namespace = {"__name__": "__guide__"}
    for line, code in found:
        try:
            exec(compile("\n" * (line - 1) + code, args.guide, "exec"), namespace)
            print(f"{args.guide}:{line}: ran")
        except ModuleNotFoundError as e:
            print(f"{args.guide}:{line}: skipped, this Python lacks {e.name}")

    read = namespace.get("read_safetensors")
    if read is None:
        print(f"{args.guide}: no block defines read_safetensors(path)")
        return 1
    tensors, metadata = read("lenet5.safetensors")
    if metadata.get("format") != "pt":
        print(f"metadata {metadata}: expected format pt")
        return 1
    if [k for k, _, _ in expected] != list(tensors):
        print(f"keys {list(tensors)}: expected {[k for k, _, _ in expected]}")
        return 1
    for key, offset, count in expected:
        want = (np.arange(offset, offset + count) % 1000).astype(np.float32) / np.float32(1000)
        got = tensors[key]
        if got.dtype != np.float32 or got.size != count or not np.array_equal(got.ravel(), want):
            print(f"{key}: {got.dtype} {got.shape} differs from what sinew wrote")
            return 1
    print(f"read_safetensors: {len(expected)} tensors as sinew wrote them")
    return 0


if __name__ == "__main__":
    sys.exit(main())
