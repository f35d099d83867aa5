#!/bin/bash
# Issue 34's DDP row on Debian 12 at 201f8f8, with the vCPUs' round trip before and after every run: 5 rounds on
# the idle machine of ResNet-18's ring against PyTorch 1.13's DDP over Gloo (2 ranks x 1 thread, each bound to a
# core by mpirun, batch 42 a rank, 10 warm-up + 30 timed steps).
set -u
out=$(dirname "$0")
for r in 1 2 3 4 5; do
  build/bench/dist --only ring --ranks 2 --threads 1 --batch 42 --bind core \
      --json $out/ddp-r$r.json > $out/ddp-r$r.txt 2>&1
done
