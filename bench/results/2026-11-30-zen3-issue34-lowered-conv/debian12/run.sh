#!/bin/bash
# Three interleaved rounds on an idle Debian 12 Zen 3 (2 cores): the lowered convolutions (NEW, with PyTorch 1.13
# beside it) and the build before them (OLD, 27c05f3, sinew alone), training at batch 42 on 2 threads.
# usage: run.sh NEW_ZOO OLD_ZOO OUTDIR
set -eu
new=$1 old=$2 out=$3
nets=alexnet,vgg16_bn,resnet50,resnet18
mkdir -p "$out"
for r in 1 2 3; do
  "$new" --net $nets --batch 42 --threads 2 --no-inference --json "$out/after-$r.json" > "$out/after-$r.txt" 2>&1
  "$old" --net $nets --batch 42 --threads 2 --no-inference --no-pytorch --json "$out/before-$r.json" > "$out/before-$r.txt" 2>&1
done
