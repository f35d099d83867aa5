#!/bin/bash
# The operator tables of issue 34's goals missed on Zen 5, one profiled run each (bench/zoo --profile, bench/lenet5
# --profile), batch 42, 2 threads, on the idle machine: `run.sh d12` on the Debian 12 host, `run.sh d13` in the
# trixie root of ../2026-12-01-zen5-issue34-debian13. The share-of-peak misses natively, and ResNet-18 and
# ResNet-50 held to AVX2.
set -u
out=$(dirname "$0")
s=$1
build/bench/lenet5 --batch 42 --threads 2 --no-pytorch --profile > $out/$s-lenet5.txt 2>&1
build/bench/zoo --net alexnet,resnet50,vgg16_bn,resnet18 --batch 42 --threads 2 --backend onednn --no-inference \
    --no-pytorch --profile > $out/$s-zoo.txt 2>&1
ONEDNN_MAX_CPU_ISA=AVX2 build/bench/zoo --net resnet18,resnet50,alexnet --batch 42 --threads 2 --backend onednn \
    --no-inference --no-pytorch --profile > $out/$s-avx2-zoo.txt 2>&1
build/bench/zoo --net resnet18_cifar --batch 42 --threads 2 --precision bf16 --backend onednn --no-inference \
    --no-pytorch --profile > $out/$s-resnet18-cifar-bf16.txt 2>&1
