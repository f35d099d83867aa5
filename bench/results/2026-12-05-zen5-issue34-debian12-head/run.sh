#!/bin/bash
# Issue 34 on Debian 12 at the head of 2026-12-05 (6c83e1a), on AMD EPYC Zen 5 (family 26 model 2; 2 vCPUs,
# 512-bit FMA datapaths): 3 interleaved rounds on the idle machine. Each round: LeNet-5, the zoo (training at batch 42
# on 2 threads, single-thread inference at batches 1 and 42), the CIFAR-stem ResNet-18 in f32 and bf16, ResNet-50 in
# f32 and bf16 (sinew alone), then the training with oneDNN held to AVX2 (ONEDNN_MAX_CPU_ISA=AVX2, sinew alone: the
# round's PyTorch figures are its anchor, PyTorch as it runs).
set -u
out=$(dirname "$0")
nets=alexnet,resnet18,resnet50,vgg16_bn
for r in 1 2 3; do
  S=$(date +%s)
  build/bench/lenet5 --batch 42 --threads 2 --json $out/lenet5-r$r.json > $out/lenet5-r$r.txt 2>&1
  build/bench/zoo --net $nets --batch 42 --threads 2 --backend onednn --json $out/zoo-r$r.json > $out/zoo-r$r.txt 2>&1
  build/bench/zoo --net resnet18_cifar --batch 42 --threads 2 --precision f32,bf16 --no-inference \
      --json $out/zoo-cifar-r$r.json > $out/zoo-cifar-r$r.txt 2>&1
  build/bench/zoo --net resnet50 --batch 42 --threads 2 --precision f32,bf16 --no-inference --no-pytorch \
      --json $out/resnet50-bf16-r$r.json > $out/resnet50-bf16-r$r.txt 2>&1
  ONEDNN_MAX_CPU_ISA=AVX2 build/bench/lenet5 --batch 42 --threads 2 --no-pytorch \
      --json $out/avx2-lenet5-r$r.json > $out/avx2-lenet5-r$r.txt 2>&1
  ONEDNN_MAX_CPU_ISA=AVX2 build/bench/zoo --net $nets --batch 42 --threads 2 --backend onednn --no-inference \
      --no-pytorch --json $out/avx2-zoo-r$r.json > $out/avx2-zoo-r$r.txt 2>&1
  echo "round $r: $(( $(date +%s) - S )) s" >> $out/rounds.txt
done
