#!/bin/bash
# Issue 34's CIFAR-stem ResNet-18 row on Debian 12 again, hours after ../2026-12-06-zen5-issue34-debian12-cache-leaves
# read 1.28x PyTorch 1.13's bf16 autocast (goal 1.35x): sinew in f32 and bf16 with PyTorch's f32 and autocast beside
# them in every round, batch 42, 2 threads, 5 rounds on the idle machine, transparent huge pages "always" (set by
# hand before, "madvise" again after), as in that folder's rounds.
set -u
out=$(dirname "$0")
for r in 1 2 3 4 5; do
  build/bench/zoo --net resnet18_cifar --batch 42 --threads 2 --precision f32,bf16 --no-inference \
      --json $out/zoo-cifar-r$r.json > $out/zoo-cifar-r$r.txt 2>&1
done
