#!/bin/bash
# Issue 34's Debian 13 row of the CIFAR-stem ResNet-18 in bf16, which has read 2.03-2.58x against PyTorch 2.6's f32
# across sets of rounds, at 693c700 on AMD EPYC Zen 5 (family 26 model 2; 2 vCPUs, AVX512_BF16), in a fresh root
# (scripts/check-fresh-machine --suite trixie --keep, then scripts/install-deps --bench in it): 5 interleaved rounds
# of that net alone on the idle machine, training at batch 42 on 2 threads unbound, sinew in f32 and bf16 beside
# PyTorch's best f32 (eager NCHW, channels_last, torch.compile) and its bf16 autocast. Round 1 compiles into an empty
# inductor cache, the later rounds reuse it.
set -u
out=$(dirname "$0")
rm -rf /root/inductor-cache && mkdir -p /root/inductor-cache
export TORCHINDUCTOR_CACHE_DIR=/root/inductor-cache
for r in 1 2 3 4 5; do
  S=$(date +%s)
  build/bench/zoo --net resnet18_cifar --batch 42 --threads 2 --precision f32,bf16 --no-inference \
      --json $out/zoo-cifar-r$r.json > $out/zoo-cifar-r$r.txt 2>&1
  echo "round $r: $(( $(date +%s) - S )) s" >> $out/rounds.txt
done
