#!/bin/bash
# Issue 34's AVX2 rows for AlexNet and ResNet-18 on Debian 12 at the commit that added the round trip to bench/zoo:
# 5 interleaved rounds (ROUNDS="1 2 3", then ROUNDS="4 5" right after) on the idle machine, each the two nets'
# training against PyTorch (batch 42, 2 threads) and then sinew alone with oneDNN held to AVX2
# (ONEDNN_MAX_CPU_ISA=AVX2; its ratio is to the round's PyTorch).
set -u
out=$(dirname "$0")
for r in ${ROUNDS:-1 2 3 4 5}; do
  S=$(date +%s)
  build/bench/zoo --net alexnet,resnet18 --batch 42 --threads 2 --backend onednn --no-inference \
      --json $out/zoo-r$r.json > $out/zoo-r$r.txt 2>&1
  ONEDNN_MAX_CPU_ISA=AVX2 build/bench/zoo --net alexnet,resnet18 --batch 42 --threads 2 --backend onednn \
      --no-inference --no-pytorch --json $out/avx2-zoo-r$r.json > $out/avx2-zoo-r$r.txt 2>&1
  echo "round $r: $(( $(date +%s) - S )) s" >> $out/rounds.txt
done
