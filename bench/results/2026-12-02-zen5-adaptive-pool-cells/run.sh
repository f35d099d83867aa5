#!/bin/bash
# AlexNet's enlarging pool (OneDnn's adaptive_pool_op, 1x1 -> 6x6) before and after its cell lists, on the idle
# machine, 2 threads: `run.sh OLD_TREE NEW_TREE` builds pool.cpp against each tree's headers and alternates 5
# rounds of it, then 3 rounds of bench/zoo's profiled AlexNet from each tree's build/ (the pool's line and the
# step's rate).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
old=$1 new=$2 bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
flags="-std=c++20 -O3 -march=native -fopenmp -I/usr/include/eigen3"
g++ $flags -I"$old/include" "$here/pool.cpp" -o "$bin/pool-old" -ldnnl
g++ $flags -I"$new/include" "$here/pool.cpp" -o "$bin/pool-new" -ldnnl
export OMP_NUM_THREADS=2
for r in 1 2 3 4 5; do
  echo "round $r"
  echo -n "  pool old  "; "$bin/pool-old"
  echo -n "  pool new  "; "$bin/pool-new"
done
for r in 1 2 3; do
  for v in old new; do
    tree=$old; [ $v = new ] && tree=$new
    echo "alexnet round $r $v"
    "$tree/build/bench/zoo" --net alexnet --batch 42 --threads 2 --backend onednn --no-inference --no-pytorch \
        --profile 2>&1 | grep -E "^alexnet|adaptive_avg_pool"
  done
done
