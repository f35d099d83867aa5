#!/bin/bash
# LeNet-5 before (35305ea) and after the Dense passes under 2 MFLOP run on one thread: ROUNDS rounds (default 5) of
# ../2026-12-04-zen5-lenet5-pooled-conv/run.sh (bench/lenet5 --batch 42 --threads 2 against PyTorch in every run, the
# order alternating), then 3 interleaved rounds of bench/ops' Dense rows (every net's fc shapes, LeNet-5's among them, OneDnn, batch 42,
# 2 threads) from both builds, into OUT/ops-{before,after}-rN.csv. Run on the idle machine:
#   [ROUNDS=5] run.sh OUT BEFORE_TREE AFTER_TREE
# with each tree built (`cmake --preset default && cmake --build --preset default --target lenet5 ops`).
set -u
out=${1:?usage: run.sh OUT BEFORE_TREE AFTER_TREE} before=${2:?} after=${3:?}
here=$(cd "$(dirname "$0")" && pwd)
ROUNDS=${ROUNDS:-5} "$here/../2026-12-04-zen5-lenet5-pooled-conv/run.sh" "$out" "$before" "$after" || exit 1
ops() {  # ops NAME TREE ROUND
  "$2/build/bench/ops" --threads 2 --batch 42 --backends onednn --only .fc --csv "$out/ops-$1-r$3.csv" > /dev/null
}
for r in 1 2 3; do
  if [ $((r % 2)) = 1 ]; then ops before "$before" $r; ops after "$after" $r; else ops after "$after" $r; ops before "$before" $r; fi
done
