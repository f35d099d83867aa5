#!/bin/bash
# bf16 1x1 convolutions onto at most 4x4 pixels with their backward weights as lowered_backward_weights' product
# (onednn/conv2d.hpp: conv_lowers_backward_weights), before and after, on the idle machine, batch 42, 2 threads.
# `run.sh OLD_ZOO NEW_ZOO` (bench/zoo built at the commit before and after): 5 interleaved rounds of ResNet-50 in
# bf16 (old alone, new alone, new in f32 alone: the bf16-over-f32 line, then new in bf16 with PyTorch f32 and
# autocast beside it; 30 timed steps) and ResNeXt-50 in bf16 (old, new; 20 steps), then 3 profiled ResNet-50 bf16
# runs of each (the operator kinds' times). The same script runs in the Debian 13 root (d13/), there with PyTorch
# beside in the first PYTORCH_ROUNDS rounds only (`run.sh OLD NEW 2`: torch.compile's compile takes minutes a run).
set -u
out=$(dirname "$0")
old=$1 new=$2 pytorch_rounds=${3:-5}
common="--batch 42 --threads 2 --no-inference"
r50="--net resnet50 --steps 30" rnx="--net resnext50_32x4d --steps 20"
for r in 1 2 3 4 5; do
  $old $r50 $common --precision bf16 --no-pytorch --json $out/r50-old-r$r.json > $out/r50-old-r$r.txt 2>&1
  $new $r50 $common --precision bf16 --no-pytorch --json $out/r50-new-r$r.json > $out/r50-new-r$r.txt 2>&1
  $new $r50 $common --precision f32 --no-pytorch --json $out/r50-f32-r$r.json > $out/r50-f32-r$r.txt 2>&1
  ((r <= pytorch_rounds)) && $new $r50 $common --precision bf16 --json $out/zoo-r$r.json > $out/zoo-r$r.txt 2>&1
  $old $rnx $common --precision bf16 --no-pytorch --json $out/rnx-old-r$r.json > $out/rnx-old-r$r.txt 2>&1
  $new $rnx $common --precision bf16 --no-pytorch --json $out/rnx-new-r$r.json > $out/rnx-new-r$r.txt 2>&1
done
for r in 1 2 3; do
  $old $r50 $common --precision bf16 --no-pytorch --profile > $out/profile-old-r$r.txt 2>&1
  $new $r50 $common --precision bf16 --no-pytorch --profile > $out/profile-new-r$r.txt 2>&1
done
