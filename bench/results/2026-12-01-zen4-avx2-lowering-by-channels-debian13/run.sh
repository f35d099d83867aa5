#!/bin/bash
# ResNet-18 (ImageNet stem) and ResNet-50 training under ONEDNN_MAX_CPU_ISA=AVX2, sinew alone, batch 42, 2 threads,
# 10 warm-up + 30 timed steps, on Debian 13 in a fresh trixie root: 6 alternating pairs of the build before (3x3
# kernels lowered on outputs to 8x8 whatever the channels; /tmp/zoo.old, bench/zoo at 5f97c04) and after (to 4x4,
# or 8x8 from 128 output channels; /tmp/zoo.new, bench/zoo at b5ebfe1). Idle machine.
set -u
out=$(dirname "$0")
: > $out/pairs.txt
for r in 1 2 3 4 5 6; do
  for arm in old new; do
    for net in resnet18 resnet50; do
      row=$(ONEDNN_MAX_CPU_ISA=AVX2 /tmp/zoo.$arm --net $net --batch 42 --threads 2 --no-inference --no-pytorch \
            --steps 30 | sed -n 2p)
      echo "$r $arm $net $(echo "$row" | awk '{print $7, $(NF)}')" | tee -a $out/pairs.txt
    done
  done
done
