#!/bin/bash
# More AVX2 pairs after run.sh: 8 rounds of the two builds capped to AVX2, alternating which runs first.
set -u
out=$(dirname "$0")
for r in 1 2 3 4 5 6 7 8; do
  order="new old"; [ $((r % 2)) = 0 ] && order="old new"
  for b in $order; do
    bin=build/bench/zoo; [ $b = old ] && bin=/root/zoo_old
    ONEDNN_MAX_CPU_ISA=AVX2 $bin --net alexnet --batch 42 --threads 2 --backend onednn --no-inference --no-pytorch \
        --json $out/pair-$b-r$r.json > $out/pair-$b-r$r.txt 2>&1
  done
done
