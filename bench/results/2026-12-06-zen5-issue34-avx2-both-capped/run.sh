#!/bin/bash
# Issue 34's AVX2 rows as an AVX2 machine would run both sides (Zen 5, 2 vCPUs, Debian 12): sinew from the avx2
# preset's build and PyTorch 1.13 (eager NCHW and channels_last), both under ONEDNN_MAX_CPU_ISA=AVX2. Debian's
# PyTorch 1.13 runs Debian's oneDNN 2.6.3 for its convolutions, inner products and batch norms, so the cap holds
# for them too, and its own kernels at AVX2 already (torch.__config__.show(): "CPU capability usage: AVX2").
# 3 rounds of LeNet-5 and the zoo's training at batch 42 on 2 threads unbound, huge pages `always`, idle machine.
# Run as root from a clone with build-avx2/ built (cmake --preset avx2): run.sh OUT
set -u
out=$1
mkdir -p "$out"
echo always > /sys/kernel/mm/transparent_hugepage/enabled
trap 'echo madvise > /sys/kernel/mm/transparent_hugepage/enabled' EXIT
export ONEDNN_MAX_CPU_ISA=AVX2
for r in 1 2 3; do
  build-avx2/bench/lenet5 --batch 42 --threads 2 --json $out/lenet5-r$r.json > $out/lenet5-r$r.txt 2>&1
  build-avx2/bench/zoo --net alexnet,resnet18,resnet50,vgg16_bn --batch 42 --threads 2 --backend onednn \
      --no-inference --json $out/zoo-r$r.json > $out/zoo-r$r.txt 2>&1
done
