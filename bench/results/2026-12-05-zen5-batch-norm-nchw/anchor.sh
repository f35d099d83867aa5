#!/bin/bash
# Issue 34's Debian 13 ResNet-18 row after the change: 3 interleaved rounds in the trixie root (install-deps --bench
# there), batch 42, 2 threads, each round the build before (sinew alone) and after, then after with PyTorch 2.6 (the
# best of eager NCHW, channels_last and torch.compile; round 1 compiles into an empty inductor cache).
# Run as: anchor.sh OUT (in the root's clone; /root/zoo-before is a copy of build/bench/zoo at 1ee357e).
set -u
out=$1
a="--net resnet18 --batch 42 --threads 2 --backend onednn --no-inference"
rm -rf /root/inductor-cache && mkdir -p /root/inductor-cache
export TORCHINDUCTOR_CACHE_DIR=/root/inductor-cache
for r in 1 2 3; do
  /root/zoo-before $a --no-pytorch --json $out/anchor-before-r$r.json > $out/anchor-before-r$r.txt 2>&1
  build/bench/zoo $a --json $out/anchor-after-r$r.json > $out/anchor-after-r$r.txt 2>&1
done
