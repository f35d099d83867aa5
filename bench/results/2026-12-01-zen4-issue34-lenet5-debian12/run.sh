#!/bin/bash
# Issue 34's LeNet-5 rows on Debian 12 at a514489 (the update split over both threads), with each run's cache-line
# round trip between the two vCPUs in its header: 5 interleaved rounds on the idle machine, each LeNet-5 against
# PyTorch (batch 42, 2 threads) then sinew alone with oneDNN held to AVX2 (ONEDNN_MAX_CPU_ISA=AVX2).
set -u
out=$(dirname "$0")
for r in 1 2 3 4 5; do
  build/bench/lenet5 --batch 42 --threads 2 --json $out/lenet5-r$r.json > $out/lenet5-r$r.txt 2>&1
  ONEDNN_MAX_CPU_ISA=AVX2 build/bench/lenet5 --batch 42 --threads 2 --no-pytorch \
      --json $out/avx2-lenet5-r$r.json > $out/avx2-lenet5-r$r.txt 2>&1
done
