#!/bin/bash
# Single-thread inference at batch 1 and 42 inside the Debian 13 root (as ../debian13/run.sh): the build at fcc9b39
# on OneDnn with PyTorch 2.6 beside it, then on Eigen alone; rounds interleaved on the idle machine.
# usage: run.sh ZOO OUTDIR ROUNDS
set -eu
zoo=$1 out=$2 rounds=${3:-3}
nets=alexnet,vgg16_bn,resnet50,resnet18
mkdir -p "$out"
export TORCHINDUCTOR_CACHE_DIR=/root/inductor-cache
for r in $(seq 1 "$rounds"); do
  S=$(date +%s)
  "$zoo" --net $nets --no-training --json "$out/onednn-$r.json" > "$out/onednn-$r.txt" 2>&1
  "$zoo" --net $nets --backend eigen --no-training --no-pytorch --json "$out/eigen-$r.json" > "$out/eigen-$r.txt" 2>&1
  echo "round $r: $(( $(date +%s) - S )) s" >> "$out/rounds.txt"
done
