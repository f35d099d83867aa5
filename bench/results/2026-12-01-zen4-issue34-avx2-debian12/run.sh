#!/bin/bash
# Issue 34's AVX2 rows for AlexNet, ResNet-18 and ResNet-50 on Debian 12, at
# 6b96acc (8x8 outputs lowered only from 128 channels): 3 interleaved rounds on the idle machine, each the
# three nets' training against PyTorch 1.13 (batch 42, 2 threads; best of eager NCHW and channels_last)
# and then sinew alone with oneDNN held to AVX2 (ONEDNN_MAX_CPU_ISA=AVX2; its ratio is to the
# round's PyTorch, as PyTorch runs).
set -u
out=$(dirname "$0")
for r in 1 2 3; do
  S=$(date +%s)
  build/bench/zoo --net alexnet,resnet18,resnet50 --batch 42 --threads 2 --backend onednn --no-inference \
      --json $out/zoo-r$r.json > $out/zoo-r$r.txt 2>&1
  ONEDNN_MAX_CPU_ISA=AVX2 build/bench/zoo --net alexnet,resnet18,resnet50 --batch 42 --threads 2 --backend onednn \
      --no-inference --no-pytorch --json $out/avx2-zoo-r$r.json > $out/avx2-zoo-r$r.txt 2>&1
  echo "round $r: $(( $(date +%s) - S )) s" >> $out/rounds.txt
done
