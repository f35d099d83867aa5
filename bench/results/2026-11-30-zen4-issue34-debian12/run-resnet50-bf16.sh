#!/bin/bash
# Item 3's ResNet-50 in bf16 against f32 (sinew alone), Debian 12, Zen 4: 3 rounds on the idle machine after run.sh.
set -u
out=$(dirname "$0")
for r in 1 2 3; do
  build/bench/zoo --net resnet50 --batch 42 --threads 2 --precision f32,bf16 --no-inference --no-pytorch \
      --json $out/resnet50-bf16-r$r.json > $out/resnet50-bf16-r$r.txt 2>&1
done
