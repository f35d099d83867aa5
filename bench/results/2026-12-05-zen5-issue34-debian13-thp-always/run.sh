#!/bin/bash
# Issue 34 on Debian 13 at 7422f9c, on AMD EPYC Zen 5 (family 26 model 2; 2 vCPUs), in a fresh root
# (scripts/check-fresh-machine --suite trixie --keep, then scripts/install-deps --bench in it), with the host's
# transparent huge pages at `always` (set by hand before, put back to `madvise` after): 3 interleaved rounds on
# the idle machine. Each round as ../2026-12-03-zen5-issue34-debian13-head/run.sh: LeNet-5, the zoo (training at
# batch 42 on 2 threads, single-thread inference at batches 1 and 42), the CIFAR-stem ResNet-18 in f32 and bf16,
# ResNet-50 in f32 and bf16 (sinew alone), the same training with oneDNN held to AVX2 (sinew alone). PyTorch
# 2.6's figure is the best of eager NCHW, channels_last and torch.compile; round 1 compiles into an empty inductor
# cache, rounds 2 and 3 reuse it. Run as: run.sh OUT (in the root's clone, build/ built with the default preset).
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
  echo "round $r: $(( $(date +%s) - S )) s" >> $out/rounds.txt
done
