#!/bin/bash
# Issue 34's LeNet-5 and DDP rows on Debian 13 at 201f8f8 (the update split over both threads; the vCPUs' round trip
# in every run), in a fresh trixie root: 5 interleaved rounds on the idle machine, each LeNet-5 against PyTorch 2.6
# (batch 42, 2 threads), LeNet-5 alone with oneDNN held to AVX2, then ResNet-18's ring against PyTorch DDP over Gloo
# (2 ranks x 1 thread, each bound to a core by mpirun, batch 42 a rank, 10 warm-up + 30 timed steps).
set -u
out=$(dirname "$0")
for r in 1 2 3 4 5; do
  S=$(date +%s)
  build/bench/lenet5 --batch 42 --threads 2 --json $out/lenet5-r$r.json > $out/lenet5-r$r.txt 2>&1
  ONEDNN_MAX_CPU_ISA=AVX2 build/bench/lenet5 --batch 42 --threads 2 --no-pytorch \
      --json $out/avx2-lenet5-r$r.json > $out/avx2-lenet5-r$r.txt 2>&1
  build/bench/dist --only ring --ranks 2 --threads 1 --batch 42 --bind core \
      --json $out/ddp-r$r.json > $out/ddp-r$r.txt 2>&1
  echo "round $r: $(( $(date +%s) - S )) s" >> $out/rounds.txt
done
