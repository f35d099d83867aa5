#!/bin/bash
# Debian 13's A/B, run inside the trixie root that `scripts/check-fresh-machine --suite trixie --keep` made (then
# `scripts/install-deps --bench`): bench/zoo built in /root/sinew at 3e35846 (new) and in /root/sinew-old from
# `git archive 0953ab0` (old). ResNet-50 alone, 5 interleaved rounds, then 3 under the AVX2 cap, then 2 profiled
# runs of each; the files land in /root/ab-d13 (copied to d13/ here).
set -u
out=/root/ab-d13; mkdir -p $out
old=/root/sinew-old/build/bench/zoo new=/root/sinew/build/bench/zoo
common="--net resnet50 --steps 30 --batch 42 --threads 2 --no-inference --no-pytorch"
for r in 1 2 3 4 5; do
  $old $common --json $out/d13-r50-old-r$r.json > $out/d13-r50-old-r$r.txt 2>&1
  $new $common --json $out/d13-r50-new-r$r.json > $out/d13-r50-new-r$r.txt 2>&1
done
for r in 1 2 3; do
  ONEDNN_MAX_CPU_ISA=AVX2 $old $common > $out/d13-avx2-r50-old-r$r.txt 2>&1
  ONEDNN_MAX_CPU_ISA=AVX2 $new $common > $out/d13-avx2-r50-new-r$r.txt 2>&1
done
for r in 1 2; do
  $old $common --profile > $out/d13-profile-old-r$r.txt 2>&1
  $new $common --profile > $out/d13-profile-new-r$r.txt 2>&1
done
