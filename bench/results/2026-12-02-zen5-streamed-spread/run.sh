#!/bin/bash
# The spread of VGG-16's folded head with ordinary against non-temporal stores, on the idle machine, 2 threads:
# `run.sh OLD_TREE NEW_TREE` builds spread.cpp (the spread alone, both forms in one process) and head.cpp (the
# head as a Model, against each tree's headers), then alternates 5 rounds of spread, old head, new head.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
old=$1 new=$2 bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
flags="-std=c++20 -O3 -march=native -fopenmp -I/usr/include/eigen3"
g++ $flags -I"$new/include" "$here/spread.cpp" -o "$bin/spread"
g++ $flags -I"$old/include" "$here/head.cpp" -o "$bin/head-old" -ldnnl
g++ $flags -I"$new/include" "$here/head.cpp" -o "$bin/head-new" -ldnnl
export OMP_NUM_THREADS=2
for r in 1 2 3 4 5; do
  echo "round $r"
  echo -n "  spread    "; "$bin/spread"
  echo -n "  head old  "; "$bin/head-old"
  echo -n "  head new  "; "$bin/head-new"
done
