#!/bin/bash
# Where the ring's exposed communication goes (issue 34's DDP row): ResNet-18 (ImageNet stem, 3x32x32), 2 ranks x
# 1 thread bound to a core each, batch 42, 10 warm-up + 30 timed steps, sinew's ring alone, with spin.patch applied
# to a worktree of 9d23cec (SINEW_SPIN_US: how long each poll of the ring keeps advancing before it returns), three
# settings interleaved over three rounds on the idle machine.
set -u
for r in 1 2 3; do
  for us in 0 3000 100000; do
    SINEW_SPIN_US=$us build/bench/dist --only ring --no-pytorch --ranks 2 --threads 1 --batch 42 --bind core \
        > "$(dirname "$0")/spin-$us-$r.txt" 2>&1
  done
done
