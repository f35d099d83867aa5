#!/bin/bash
# Batch-1 (and 42) single-thread inference, OneDnn and Eigen side by side, 3 interleaved rounds, Debian 12, idle.
set -u
cd /work/main
O=/work/h39/eigen-after
for r in 1 2 3; do
  build/bench/zoo --net alexnet,resnet18,resnet50,vgg16_bn --backend onednn,eigen --no-training --no-pytorch \
      --json $O/zoo-r$r.json > $O/zoo-r$r.txt 2>&1
done
echo done >> $O/rounds.txt
