#!/bin/bash
# Issue 34 on Debian 12 (Zen 3, AVX2): convolutions with one output pixel as inner products (db09b72).
# 3 interleaved rounds on the idle machine, batch 42, 2 threads, training: the build at f104dc4 with PyTorch 1.13
# beside it in the same run, then the build at 79b9cad (before the change; zoo-before) without PyTorch.
# zoo-before: `git checkout 79b9cad && ninja -C build zoo && cp build/bench/zoo /tmp/zoo-before`.
set -u
cd /work/main
O=bench/results/2026-11-30-zen3-issue34-one-pixel-conv/debian12
for r in 1 2 3; do
  S=$(date +%s)
  build/bench/zoo --net resnet50,resnet18 --batch 42 --threads 2 --backend onednn --no-inference \
      --json $O/after-r$r.json > $O/after-r$r.txt 2>&1
  /tmp/zoo-before --net resnet50,resnet18 --batch 42 --threads 2 --backend onednn --no-inference --no-pytorch \
      --json $O/before-r$r.json > $O/before-r$r.txt 2>&1
  echo "round $r: $(( $(date +%s) - S )) s" >> $O/rounds.txt
done
# The operator tables of the new build (a separately profiled run of 5 steps; oneDNN's verbose times per
# primitive in profile-verbose.txt).
build/bench/zoo --net resnet50,resnet18 --batch 42 --threads 2 --backend onednn --no-inference --no-pytorch \
    --profile > $O/profile.txt 2>&1
echo done >> $O/rounds.txt
