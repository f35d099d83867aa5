#!/bin/bash
o="--net resnet18 --batch 42 --threads 2 --backend onednn --no-inference --no-pytorch --steps 40"
for r in $1; do
  ./zoo-unchunked $o > e-d12n-direct-r$r.txt 2>&1
  SINEW_FORCE_AVX2_FORM=1 ./zoo-unchunked $o > e-d12n-unch-r$r.txt 2>&1
  SINEW_FORCE_AVX2_FORM=1 ./zoo-chunked $o > e-d12n-chunk-r$r.txt 2>&1
  ONEDNN_MAX_CPU_ISA=AVX2 ./zoo-unchunked $o > e-d12a-unch-r$r.txt 2>&1
  ONEDNN_MAX_CPU_ISA=AVX2 ./zoo-chunked $o > e-d12a-chunk-r$r.txt 2>&1
done
