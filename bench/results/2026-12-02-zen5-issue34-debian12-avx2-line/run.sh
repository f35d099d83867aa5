#!/bin/bash
# Issue 34's two Debian 12 AVX2 rows that sit on their 1.8x line (AlexNet and ResNet-50), at 9a9c8c9 on AMD EPYC
# Zen 5 (family 26 model 2; 2 vCPUs): 5 interleaved rounds on the idle machine. Each round: the two nets' training
# at batch 42 on 2 threads unbound with PyTorch beside them (the anchor: the best of its eager NCHW and
# channels_last), then sinew alone with oneDNN held to AVX2 (ONEDNN_MAX_CPU_ISA=AVX2).
set -u
out=$(dirname "$0")
nets=alexnet,resnet50
for r in 1 2 3 4 5; do
  S=$(date +%s)
  build/bench/zoo --net $nets --batch 42 --threads 2 --backend onednn --no-inference \
      --json $out/zoo-r$r.json > $out/zoo-r$r.txt 2>&1
  ONEDNN_MAX_CPU_ISA=AVX2 build/bench/zoo --net $nets --batch 42 --threads 2 --backend onednn --no-inference \
      --no-pytorch --json $out/avx2-zoo-r$r.json > $out/avx2-zoo-r$r.txt 2>&1
  echo "round $r: $(( $(date +%s) - S )) s" >> $out/rounds.txt
done
