#!/bin/bash
# ResNet-18's training on Debian 13 at two commits, interleaved: 1ee357e (build/, main's head; the step's code that
# of df3ca7b) and 63be339 (/root/old, the last commit whose Debian 13 rounds put ResNet-18 at 76% of the peak), in a
# fresh trixie root on AMD EPYC Zen 5 (2 vCPUs), batch 42, 2 threads, sinew alone; then one profiled run each.
# Run as: run.sh OUT (in the root's clone, both builds' bench/zoo built with the default preset).
set -u
out=$1
for r in 1 2 3 4 5 6 7; do
  build/bench/zoo --net resnet18 --batch 42 --threads 2 --backend onednn --no-inference --no-pytorch \
      --json $out/head-r$r.json > $out/head-r$r.txt 2>&1
  /root/old/build/bench/zoo --net resnet18 --batch 42 --threads 2 --backend onednn --no-inference --no-pytorch \
      --json $out/old-r$r.json > $out/old-r$r.txt 2>&1
done
build/bench/zoo --net resnet18 --batch 42 --threads 2 --backend onednn --no-inference --no-pytorch --profile \
    > $out/head-profile.txt 2>&1
/root/old/build/bench/zoo --net resnet18 --batch 42 --threads 2 --backend onednn --no-inference --no-pytorch \
    --profile > $out/old-profile.txt 2>&1
