#!/bin/bash
# LeNet-5 before and after the PooledConv node (a Conv2d, its tanh and the 2x2 average pool as one node; OneDnn pools
# inside the thin convolution's passes), each against PyTorch in its own run: bench/lenet5 --batch 42 --threads 2
# from two builds, ROUNDS rounds (default 7), the order alternating (before, after; after, before; ...), into OUT/.
# `avx2` holds both sides to AVX2 as ../2026-12-03-zen5-issue34-avx2-both-capped does (the avx2 preset's builds,
# ONEDNN_MAX_CPU_ISA=AVX2, ATEN_CPU_CAPABILITY=avx2, OPENBLAS_CORETYPE=Haswell); else the default builds at full
# width. Run from anywhere on the idle machine:
#   [ROUNDS=7] run.sh OUT BEFORE_TREE AFTER_TREE [avx2]
# with each tree built (`cmake --preset default && cmake --build --preset default --target lenet5`, or the avx2
# preset's build-avx2); on Debian 13 inside the trixie root.
set -u
out=${1:?usage: run.sh OUT BEFORE_TREE AFTER_TREE [avx2]} before=${2:?} after=${3:?} mode=${4:-full}
build=build
if [ "$mode" = avx2 ]; then
  build=build-avx2
  export ONEDNN_MAX_CPU_ISA=AVX2 ATEN_CPU_CAPABILITY=avx2 OPENBLAS_CORETYPE=Haswell
fi
mkdir -p "$out"
run() {  # run NAME TREE ROUND
  "$2/$build/bench/lenet5" --batch 42 --threads 2 --json "$out/$1-r$3.json" > "$out/$1-r$3.txt" 2>&1
}
for r in $(seq 1 "${ROUNDS:-7}"); do
  S=$(date +%s)
  if [ $((r % 2)) = 1 ]; then run before "$before" $r; run after "$after" $r; else run after "$after" $r; run before "$before" $r; fi
  echo "round $r: $(( $(date +%s) - S )) s" >> "$out/rounds.txt"
done
