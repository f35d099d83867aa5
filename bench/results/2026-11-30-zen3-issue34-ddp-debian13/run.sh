#!/bin/bash
# Issue 34's DDP row on Debian 13 (PyTorch 2.6, Gloo): ResNet-18 (ImageNet stem, 3x32x32), 2 ranks x 1 thread,
# batch 42 per rank, each rank bound to its core (mpirun --bind-to core), 10 warm-up and 30 timed steps; sinew's
# ring next to DDP in the same run; 3 runs back to back on the idle 2-core Zen 3.
set -euo pipefail
out=$(dirname "$0")
for r in 1 2 3; do
  build/bench/dist --only ring --ranks 2 --threads 1 --batch 42 --bind core --json "$out/dist-r$r.json" > "$out/dist-r$r.txt" 2>&1
done
