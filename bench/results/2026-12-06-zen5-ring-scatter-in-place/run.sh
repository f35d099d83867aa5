#!/bin/bash
# The ring's exposed time before and after the in-place sum stores each rank's summed segment into every rank's
# part of the shared data (no gather pass): OLD and NEW are bench/dist binaries built from 7d8ce20 and from it with
# comm/ring_allreduce.hpp changed. ResNet-18 (ImageNet stem, 3x32x32), 2 ranks x 1 thread bound to a core each by
# mpirun, batch 42 a rank, 10 warm-up + 30 timed steps, the ring alone (no PyTorch), interleaved rounds on the
# idle machine. Usage: run.sh OLD NEW ROUNDS [PREFIX]
set -u
out=$(dirname "$0")
old=$1 new=$2 rounds=$3 prefix=${4:-}
for r in $(seq 1 "$rounds"); do
  for v in old new; do
    bin=$old; [ $v = new ] && bin=$new
    "$bin" --only ring --ranks 2 --threads 1 --batch 42 --bind core --no-pytorch \
        --json "$out/${prefix}$v-r$r.json" > "$out/${prefix}$v-r$r.txt" 2>&1
  done
done
