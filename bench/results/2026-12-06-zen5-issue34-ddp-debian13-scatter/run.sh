#!/bin/bash
# Issue 34's DDP row on Debian 13 at 4067d37 (Zen 5; the ring's in-place sum stores into every rank's gradients):
# the ring (gradients summed where they lie in its shared window) with PyTorch's DDP over Gloo beside it in every
# round. ResNet-18 (ImageNet stem, 3x32x32), 2 ranks x 1 thread bound to a core each by mpirun, batch 42 a rank,
# 10 warm-up + 30 timed steps, five rounds on the idle machine, transparent huge pages "madvise" (as on 2026-12-01).
set -eu
here=$(dirname "$0")
for r in 1 2 3 4 5; do
  build/bench/dist --only ring --ranks 2 --threads 1 --batch 42 --bind core \
      --json "$here/round-$r.json" > "$here/round-$r.txt" 2>&1
done
