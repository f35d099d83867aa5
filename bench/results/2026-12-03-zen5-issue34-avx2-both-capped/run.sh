#!/bin/bash
# Issue 34's AVX2 rows as an AVX2 machine would run them, on AMD EPYC Zen 5 (family 26 model 2; 2 vCPUs, 512-bit FMA
# datapaths): sinew and PyTorch both held to 256-bit instructions in the same run. The issue's own rows hold only
# oneDNN's kernels to AVX2 (ONEDNN_MAX_CPU_ISA=AVX2 on the default build; PyTorch as it runs). Here sinew is the avx2
# preset's build (its own kernels compiled for x86-64-v3 too: ../2026-12-01-zen5-avx2-build says why) under the same
# cap, and the PyTorch child inherits the cap (both stacks' PyTorch run their convolutions on the system's oneDNN,
# which reads it as sinew's does) with ATEN_CPU_CAPABILITY=avx2 (ATen's kernels, and torch.compile's generated code
# on PyTorch 2.x) and OPENBLAS_CORETYPE=Haswell (nn.Linear's products). 3 interleaved rounds on the idle machine,
# batch 42, 2 threads unbound, into d12/ or d13/. Run from the repository root after
# `cmake --preset avx2 && cmake --build --preset avx2 --target lenet5 zoo`: run.sh d12 on the Debian 12 host,
# run.sh d13 in the trixie root. A second argument names another build folder (d12-default-build/: `build`).
set -u
stack=${1:?usage: run.sh d12|d13 [BUILD]}
build=${2:-build-avx2}  # the avx2 preset: sinew's own kernels compiled for AVX2 too (x86-64-v3)
out=$(dirname "$0")/$stack  # rounds_table.py reads a folder of lenet5-rN.json and zoo-rN.json
mkdir -p $out
nets=alexnet,resnet18,resnet50,vgg16_bn
export ONEDNN_MAX_CPU_ISA=AVX2 ATEN_CPU_CAPABILITY=avx2 OPENBLAS_CORETYPE=Haswell
if [ "$stack" = d13 ]; then  # round 1 compiles into an empty inductor cache, rounds 2 and 3 reuse it
  rm -rf /root/inductor-cache-avx2 && mkdir -p /root/inductor-cache-avx2
  export TORCHINDUCTOR_CACHE_DIR=/root/inductor-cache-avx2
fi
for r in 1 2 3; do
  S=$(date +%s)
  $build/bench/lenet5 --batch 42 --threads 2 --json $out/lenet5-r$r.json > $out/lenet5-r$r.txt 2>&1
  $build/bench/zoo --net $nets --batch 42 --threads 2 --backend onednn --no-inference \
      --json $out/zoo-r$r.json > $out/zoo-r$r.txt 2>&1
  echo "$stack round $r: $(( $(date +%s) - S )) s" >> $out/rounds.txt
done
