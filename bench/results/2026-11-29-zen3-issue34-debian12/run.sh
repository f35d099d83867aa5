#!/bin/bash
# Issue 34 on Debian 12 (Zen 3, AVX2): 3 interleaved rounds, idle machine, batch 42, 2 threads.
set -u
cd /work/main
O=/work/h39/d12
for r in 1 2 3; do
  S=$(date +%s)
  build/bench/lenet5 --batch 42 --threads 2 --json $O/lenet5-r$r.json > $O/lenet5-r$r.txt 2>&1
  build/bench/zoo --net alexnet,resnet18,resnet50,vgg16_bn --batch 42 --threads 2 --backend onednn \
      --json $O/zoo-r$r.json > $O/zoo-r$r.txt 2>&1
  build/bench/zoo --net alexnet,resnet18,resnet50,vgg16_bn --backend eigen --no-training --no-pytorch \
      --json $O/zoo-eigen-r$r.json > $O/zoo-eigen-r$r.txt 2>&1
  build/bench/zoo --net resnet18_cifar --batch 42 --threads 2 --precision f32 --no-inference \
      --json $O/zoo-cifar-r$r.json > $O/zoo-cifar-r$r.txt 2>&1
  echo "round $r: $(( $(date +%s) - S )) s" >> $O/rounds.txt
done
echo done >> $O/rounds.txt
