#!/bin/bash
# 1x1 convolutions at stride 1 onto at most 4x4 pixels as oneDNN's inner product over the NHWC image read in place
# (onednn/lowered_conv2d.hpp), before and after, on the idle machine, batch 42, 2 threads. `run.sh OLD_ZOO NEW_ZOO`
# (bench/zoo built at the commit before and after): 5 interleaved rounds of ResNet-50 (old alone, new alone, new with
# PyTorch beside it; 30 timed steps) and MobileNetV2 (old, new; 100 steps), then 5 of ResNet-50 with oneDNN capped
# to AVX2, then 3 profiled ResNet-50 runs of each (the operator kinds' times).
set -u
out=$(dirname "$0")
old=$1 new=$2
common="--batch 42 --threads 2 --no-inference"
r50="--net resnet50 --steps 30" mbv2="--net mobilenet_v2 --steps 100"
for r in 1 2 3 4 5; do
  $old $r50 $common --no-pytorch --json $out/r50-old-r$r.json > $out/r50-old-r$r.txt 2>&1
  $new $r50 $common --no-pytorch --json $out/r50-new-r$r.json > $out/r50-new-r$r.txt 2>&1
  $new $r50 $common --json $out/zoo-r$r.json > $out/zoo-r$r.txt 2>&1
  $old $mbv2 $common --no-pytorch --json $out/mbv2-old-r$r.json > $out/mbv2-old-r$r.txt 2>&1
  $new $mbv2 $common --no-pytorch --json $out/mbv2-new-r$r.json > $out/mbv2-new-r$r.txt 2>&1
done
for r in 1 2 3 4 5; do
  for v in old new; do
    bin=$old; [[ $v == new ]] && bin=$new
    ONEDNN_MAX_CPU_ISA=AVX2 $bin $r50 $common --no-pytorch > $out/avx2-r50-$v-r$r.txt 2>&1
  done
done
for r in 1 2 3; do
  $old $r50 $common --no-pytorch --profile > $out/profile-old-r$r.txt 2>&1
  $new $r50 $common --no-pytorch --profile > $out/profile-new-r$r.txt 2>&1
done
