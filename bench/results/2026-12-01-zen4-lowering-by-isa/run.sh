#!/bin/bash
# 972aaf5 (small 2x2 and 3x3 convolutions lowered where oneDNN runs AVX2 kernels, chosen at set-up) under
# ONEDNN_MAX_CPU_ISA=AVX2 on a Zen 4, Debian 12: bench/zoo training at batch 42 on 2 threads, sinew alone, the
# build before it (b1acaa2: unlowered in an AVX-512 build whatever the cap) and the build at 972aaf5 (lowered
# under the cap), three interleaved rounds on the idle machine.
# Debian 13 (debian13/): the same loop in a trixie root, both trees built there (/root/sinew-old, /root/sinew).
# usage: run.sh OLD_BUILD_DIR NEW_BUILD_DIR
set -eu
old=$1 new=$2 out=$(dirname "$0")
for r in 1 2 3; do
  for v in old new; do
    b=$new; [ $v = old ] && b=$old
    ONEDNN_MAX_CPU_ISA=AVX2 $b/bench/zoo --net alexnet,resnet18,resnet50,vgg16_bn --batch 42 --threads 2 \
        --backend onednn --no-inference --no-pytorch > $out/$v-r$r.txt 2>&1
  done
done
