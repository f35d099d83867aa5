#!/bin/bash
# bench/lenet5 (sinew alone, batch 42, 2 threads) with its OpenMP threads unbound, as bench/lenet5 and bench/zoo run
# them, and bound (OMP_PROC_BIND=close OMP_PLACES=cores), alternating, five runs each on the idle machine.
set -u
out=$(dirname "$0")
for i in 1 2 3 4 5; do
  build/bench/lenet5 --batch 42 --threads 2 --no-pytorch 2>&1 | tail -1 >> $out/unbound.txt
  OMP_PROC_BIND=close OMP_PLACES=cores build/bench/lenet5 --batch 42 --threads 2 --no-pytorch 2>&1 | tail -1 >> $out/bound.txt
done
