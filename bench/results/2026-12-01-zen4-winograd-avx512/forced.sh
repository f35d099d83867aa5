#!/bin/bash
o="--net resnet18,resnet50 --batch 42 --threads 2 --backend onednn --no-inference --no-pytorch --steps 40"
mkdir -p /root/ab13
for r in $1; do
  build/bench/zoo $o > /root/ab13/d13n-direct-r$r.txt 2>&1
  SINEW_FORCE_AVX2_FORM=1 build/bench/zoo $o > /root/ab13/d13n-wino-r$r.txt 2>&1
done
