#!/bin/bash
# Batch norm on NCHW input converted to a layout with a jit kernel: ResNet-18 and ResNet-50 trained before
# (1ee357e) and after, on both stacks, the four builds alternating for 4 rounds: batch 42, 2 threads, sinew
# alone, transparent huge pages `always`. Debian 12 on the host (before: a copy of build/bench/zoo at 1ee357e),
# Debian 13 in a fresh trixie root (before: /root/zoo-before). Run on the host as: run.sh INROOT OUT (INROOT runs a
# command in the root's clone with /proc, /sys and /dev mounted and unmounts them on every exit path).
set -u
inroot=$1 out=$2
a="--net resnet18,resnet50 --batch 42 --threads 2 --backend onednn --no-inference --no-pytorch"
for r in 1 2 3 4; do
  /var/tmp/zoo-before-d12 $a --json $out/d12-before-r$r.json > $out/d12-before-r$r.txt 2>&1
  build/bench/zoo $a --json $out/d12-after-r$r.json > $out/d12-after-r$r.txt 2>&1
  $inroot "/root/zoo-before $a --json /tmp/b.json > /tmp/b.txt 2>&1; build/bench/zoo $a --json /tmp/a.json > /tmp/a.txt 2>&1"
  for s in b:before a:after; do
    cp /var/tmp/t75b/tmp/${s%%:*}.json $out/d13-${s##*:}-r$r.json; cp /var/tmp/t75b/tmp/${s%%:*}.txt $out/d13-${s##*:}-r$r.txt
  done
done
