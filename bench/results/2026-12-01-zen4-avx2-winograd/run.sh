#!/bin/bash
# ResNet-18 and ResNet-50 (32x32 input, ImageNet stem) under ONEDNN_MAX_CPU_ISA=AVX2 with and without the Winograd
# form of their small 3x3 layers: `run.sh STACK BEFORE AFTER`, STACK d12 or d13, BEFORE and AFTER two bench/zoo
# binaries (built at 30c5e04, before the Winograd op, and at 4987f0c, with it). Interleaved rounds (ROUNDS, "1 2 3"
# by default) on the idle machine, each PyTorch's training and sinew's native row (bench/zoo with its anchor; the
# Winograd form is not chosen natively on this AVX-512 CPU), then sinew capped to AVX2 after and before. Batch 42,
# 2 threads.
set -u
out=$(dirname "$0")
s=$1 before=$2 after=$3
for r in ${ROUNDS:-1 2 3}; do
  S=$(date +%s)
  $after --net resnet18,resnet50 --batch 42 --threads 2 --backend onednn --no-inference \
      --json $out/$s-zoo-r$r.json > $out/$s-zoo-r$r.txt 2>&1
  ONEDNN_MAX_CPU_ISA=AVX2 $after --net resnet18,resnet50 --batch 42 --threads 2 --backend onednn --no-inference \
      --no-pytorch --json $out/$s-avx2-winograd-r$r.json > $out/$s-avx2-winograd-r$r.txt 2>&1
  ONEDNN_MAX_CPU_ISA=AVX2 $before --net resnet18,resnet50 --batch 42 --threads 2 --backend onednn --no-inference \
      --no-pytorch --json $out/$s-avx2-before-r$r.json > $out/$s-avx2-before-r$r.txt 2>&1
  echo "$s round $r: $(( $(date +%s) - S )) s" >> $out/rounds.txt
done
