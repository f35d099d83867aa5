#!/bin/bash
# ResNet-18 and ResNet-50 (32x32 input, ImageNet stem) on oneDNN's native (AVX-512) kernels with the Winograd form
# taken on every ISA (AFTER) and only where oneDNN runs AVX2 kernels (BEFORE): `run.sh STACK BEFORE AFTER`, STACK
# d12 or d13, BEFORE and AFTER two bench/zoo binaries. Interleaved rounds (ROUNDS, "1 2 3 4 5" by default) on the
# idle machine, each PyTorch's training beside AFTER (bench/zoo with its anchor), then BEFORE. Batch 42, 2 threads.
set -u
out=$(dirname "$0")
s=$1 before=$2 after=$3
for r in ${ROUNDS:-1 2 3 4 5}; do
  S=$(date +%s)
  $after --net resnet18,resnet50 --batch 42 --threads 2 --backend onednn --no-inference \
      --json $out/$s-after-r$r.json > $out/$s-after-r$r.txt 2>&1
  $before --net resnet18,resnet50 --batch 42 --threads 2 --backend onednn --no-inference --no-pytorch \
      --json $out/$s-before-r$r.json > $out/$s-before-r$r.txt 2>&1
  echo "$s round $r: $(( $(date +%s) - S )) s" >> $out/rounds.txt
done
