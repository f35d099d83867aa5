#!/bin/bash
# The CIFAR-stem ResNet-18 in bf16 before and after lowered backward weights (onednn/lowered_backward_weights.hpp),
# on AMD EPYC Zen 5 (family 26 model 2; 2 vCPUs, 512-bit FMA datapaths), batch 42, 2 threads, on the idle machine.
# `run.sh STACK OLD_ZOO`: STACK names the files (d12 on the Debian 12 host, d13 in a trixie root made by
# scripts/check-fresh-machine --suite trixie --keep, then scripts/install-deps --bench); OLD_ZOO is bench/zoo built
# at the commit before (2da862c), build/bench/zoo the one after. 3 interleaved rounds: the old build alone, the new
# one alone, then the new one with PyTorch beside it (f32, and bf16 autocast; on Debian 13 the best of eager NCHW,
# channels_last and torch.compile), whose zoo-cifar-rN.json bench/support/rounds_table.py reads.
set -u
out=$(dirname "$0")/$1
old=$2
mkdir -p $out
if [[ $1 == d13 ]]; then
  rm -rf /root/inductor-cache && mkdir -p /root/inductor-cache
  export TORCHINDUCTOR_CACHE_DIR=/root/inductor-cache
fi
for r in 1 2 3; do
  $old --net resnet18_cifar --batch 42 --threads 2 --precision bf16 --no-inference --no-pytorch \
      --json $out/before-r$r.json > $out/before-r$r.txt 2>&1
  build/bench/zoo --net resnet18_cifar --batch 42 --threads 2 --precision bf16 --no-inference --no-pytorch \
      --json $out/after-r$r.json > $out/after-r$r.txt 2>&1
  build/bench/zoo --net resnet18_cifar --batch 42 --threads 2 --precision f32,bf16 --no-inference \
      --json $out/zoo-cifar-r$r.json > $out/zoo-cifar-r$r.txt 2>&1
done
