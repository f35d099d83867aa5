#!/bin/bash
# ResNet-18's training on the two stacks minute by minute: the Debian 12 host's build/bench/zoo and the trixie
# root's (both at 1ee357e), alternated 6 times, batch 42, 2 threads, sinew alone. Run on the host as:
# stacks.sh ROOT INROOT OUT (ROOT: the trixie root's clone, INROOT: a script that runs a command in that clone with
# /proc, /sys and /dev mounted and unmounts them on every exit path).
set -u
root=$1 inroot=$2 out=$3
z="bench/zoo --net resnet18 --batch 42 --threads 2 --backend onednn --no-inference --no-pytorch"
for r in 1 2 3 4 5 6; do
  build/$z --json $out/d12-r$r.json > $out/d12-r$r.txt 2>&1
  $inroot "build/$z --json /tmp/d13.json > /tmp/d13.txt 2>&1"
  cp $root/../../tmp/d13.json $out/d13-r$r.json; cp $root/../../tmp/d13.txt $out/d13-r$r.txt
done
