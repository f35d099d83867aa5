#!/bin/bash
# AlexNet under ONEDNN_MAX_CPU_ISA=AVX2 on Debian 13 (oneDNN 3.7.2), its first layer in oneDNN's layout (the old
# build, ea48912: the gemm-based convolution) against NHWC on brg_conv_fwd:avx2 (conv2d.hpp: nhwc_where_gemm), in a
# fresh trixie root: 3 interleaved rounds on the idle machine, each the new build against PyTorch 2.6 (best of eager
# NCHW, channels_last and torch.compile; sinew native beside it), then the new build and the old one capped to AVX2.
# Batch 42, 2 threads. Run from the repository root inside the root; zoo_old is ea48912's bench/zoo.
set -u
out=$(dirname "$0")
export TORCHINDUCTOR_CACHE_DIR=/root/inductor-cache
for r in 1 2 3; do
  S=$(date +%s)
  build/bench/zoo --net alexnet --batch 42 --threads 2 --backend onednn --no-inference \
      --json $out/zoo-r$r.json > $out/zoo-r$r.txt 2>&1
  ONEDNN_MAX_CPU_ISA=AVX2 build/bench/zoo --net alexnet --batch 42 --threads 2 --backend onednn --no-inference \
      --no-pytorch --json $out/avx2-new-r$r.json > $out/avx2-new-r$r.txt 2>&1
  ONEDNN_MAX_CPU_ISA=AVX2 /root/zoo_old --net alexnet --batch 42 --threads 2 --backend onednn --no-inference \
      --no-pytorch --json $out/avx2-old-r$r.json > $out/avx2-old-r$r.txt 2>&1
  echo "round $r: $(( $(date +%s) - S )) s" >> $out/rounds.txt
done
