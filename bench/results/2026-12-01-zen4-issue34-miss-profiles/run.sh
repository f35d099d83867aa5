#!/bin/bash
# The operator tables of issue 34's missed goals, one profiled run each (bench/zoo --profile, bench/lenet5
# --profile), batch 42, 2 threads, on the idle machine: `run.sh d12` on the Debian 12 host, `run.sh d13` in a fresh
# trixie root (bench/results/2026-12-01-zen4-avx2-nhwc-first-layer-debian13 says how it was made).
set -u
out=$(dirname "$0")
s=$1
build/bench/lenet5 --batch 42 --threads 2 --no-pytorch --profile > $out/$s-lenet5.txt 2>&1
build/bench/zoo --net resnet18 --batch 42 --threads 2 --backend onednn --no-inference --no-pytorch --profile \
    > $out/$s-resnet18.txt 2>&1
ONEDNN_MAX_CPU_ISA=AVX2 build/bench/zoo --net resnet18,alexnet --batch 42 --threads 2 --backend onednn --no-inference \
    --no-pytorch --profile > $out/$s-avx2-resnet18-alexnet.txt 2>&1
build/bench/zoo --net resnet18_cifar --batch 42 --threads 2 --precision bf16 --backend onednn --no-inference \
    --no-pytorch --profile > $out/$s-resnet18-cifar-bf16.txt 2>&1
