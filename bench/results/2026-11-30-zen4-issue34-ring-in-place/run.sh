#!/bin/bash
# The ring's gradients summed where they lie in its shared window (share_gradients, the default: "ring") against
# the copying path ("ring-copy": options.share_gradients false), with PyTorch DDP over Gloo beside them in every
# round. ResNet-18 (ImageNet stem, 3x32x32), 2 ranks x 1 thread bound to a core each by mpirun, batch 42,
# 10 warm-up + 30 timed steps, three rounds on the idle machine (each round runs DDP, ring, ring-copy).
set -eu
here=$(dirname "$0")
for r in 1 2 3; do
  build/bench/dist --only ring,ring-copy --ranks 2 --threads 1 --batch 42 --bind core \
      --json "$here/round-$r.json" > "$here/round-$r.txt" 2>&1
done
