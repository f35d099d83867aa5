#!/bin/bash
o="--net resnet18,resnet50 --batch 42 --threads 2 --backend onednn --no-inference --no-pytorch --steps 30"
for r in $1; do
  ONEDNN_MAX_CPU_ISA=AVX2 ./zoo-unchunked $o > f-d12a-unch-r$r.txt 2>&1
  ONEDNN_MAX_CPU_ISA=AVX2 ./zoo-chunked $o > f-d12a-chunk-r$r.txt 2>&1
done
