#!/bin/bash
# What the AVX2 rows of issue 34 owe to sinew's own kernels running AVX-512: at 1742b7f's code, the default build
# (-march=native, AVX-512 on this Zen 5) against one configured with -DSINEW_NATIVE=OFF
# -DCMAKE_CXX_FLAGS=-march=x86-64-v3 (AVX2, FMA; no AVX-512 instruction in sinew's code), both under
# ONEDNN_MAX_CPU_ISA=AVX2, sinew alone: LeNet-5 and the zoo's training at batch 42 on 2 threads, 3 rounds on the
# idle machine, the two builds' order alternating.
#   run.sh NATIVE_BUILD AVX2_BUILD
set -u
out=$(dirname "$0")
native=$1 avx2=$2
export ONEDNN_MAX_CPU_ISA=AVX2
for r in 1 2 3; do
  if ((r % 2)); then order="native avx2"; else order="avx2 native"; fi
  for arm in $order; do
    if [[ $arm == native ]]; then b=$native; else b=$avx2; fi
    $b/bench/lenet5 --batch 42 --threads 2 --no-pytorch --json $out/$arm-lenet5-r$r.json > $out/$arm-lenet5-r$r.txt 2>&1
    $b/bench/zoo --net alexnet,resnet18,resnet50,vgg16_bn --batch 42 --threads 2 --backend onednn --no-inference \
        --no-pytorch --json $out/$arm-zoo-r$r.json > $out/$arm-zoo-r$r.txt 2>&1
  done
done
