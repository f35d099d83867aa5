#!/bin/bash
# What 33fd3f6 (no lowered convolutions in AVX-512 builds) costs on a Zen 4, Debian 12: bench/zoo training at batch
# 42 on 2 threads, the build at HEAD (9a5b02d's C++: unlowered, PyTorch 1.13 beside it) and the build before it
# (af0c517's tree, lowered; sinew alone), three interleaved rounds on the idle machine.
# usage: run.sh NEW_ZOO OLD_ZOO
set -eu
new=$1 old=$2 out=$(dirname "$0")
nets=alexnet,resnet18,resnet50,vgg16_bn
for r in 1 2 3; do
  "$new" --net $nets --batch 42 --threads 2 --no-inference --json $out/unlowered-r$r.json > $out/unlowered-r$r.txt 2>&1
  "$old" --net $nets --batch 42 --threads 2 --no-inference --no-pytorch --json $out/lowered-r$r.json > $out/lowered-r$r.txt 2>&1
done
