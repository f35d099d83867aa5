#!/bin/bash
# Issue 34 on Debian 13 at ada630a, on AMD EPYC Zen 5 (family 26 model 2; 2 vCPUs) whose CPUID leaf 0x8000001D
# reports the caches again (cpuid.txt; it was empty on Dec 4-5), in a fresh root (scripts/check-fresh-machine
# --suite trixie --keep, then scripts/install-deps --bench in it), with the host's transparent huge pages at
# `always` (set by hand before, put back to `madvise` after): 3 interleaved rounds on the idle machine. Each round
# is that of ../2026-12-05-zen5-issue34-debian13-avx2-build: LeNet-5, the zoo's training at batch 42 on 2 threads
# and single-thread inference, the CIFAR-stem ResNet-18 in f32 and bf16, ResNet-50 in f32 and bf16 sinew alone,
# LeNet-5 and the zoo's training with oneDNN capped to AVX2 on the default build, then the same AVX2 rows from the
# avx2 preset's build (build-avx2: sinew's own kernels compiled for x86-64-v3, oneDNN capped), which is what an
# AVX2 machine runs (bench/README.md); PyTorch 2.6 as it runs is the anchor of both AVX2 rows, the best of eager
# NCHW, channels_last and torch.compile. Round 1 compiles into an empty inductor cache, rounds 2 and 3 reuse it.
# Run as: run.sh OUT (in the root's clone, build/ and build-avx2/ built).
set -u
out=$1
nets=alexnet,resnet18,resnet50,vgg16_bn
rm -rf /root/inductor-cache && mkdir -p /root/inductor-cache
export TORCHINDUCTOR_CACHE_DIR=/root/inductor-cache
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
  ONEDNN_MAX_CPU_ISA=AVX2 build-avx2/bench/lenet5 --batch 42 --threads 2 --no-pytorch \
      --json $out/avx2build-lenet5-r$r.json > $out/avx2build-lenet5-r$r.txt 2>&1
  ONEDNN_MAX_CPU_ISA=AVX2 build-avx2/bench/zoo --net $nets --batch 42 --threads 2 --backend onednn --no-inference \
      --no-pytorch --json $out/avx2build-zoo-r$r.json > $out/avx2build-zoo-r$r.txt 2>&1
  echo "round $r: $(( $(date +%s) - S )) s" >> $out/rounds.txt
done
