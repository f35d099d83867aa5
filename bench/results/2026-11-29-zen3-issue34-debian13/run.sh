#!/bin/bash
# Issue 34 on Debian 13 (Zen 3, AVX2), inside the trixie root: 3 interleaved rounds, idle machine, batch 42,
# 2 threads. Round 1 compiles torch.compile's candidates into an empty inductor cache (its compile_seconds are
# cold); rounds 2 and 3 reuse that cache (the candidate's rate is a steady-state rate either way).
set -u
cd /root/sinew
O=/root/d13
mkdir -p $O
rm -rf /root/inductor-cache && mkdir -p /root/inductor-cache
export TORCHINDUCTOR_CACHE_DIR=/root/inductor-cache
for r in 1 2 3; do
  S=$(date +%s)
  build/bench/lenet5 --batch 42 --threads 2 --json $O/lenet5-r$r.json > $O/lenet5-r$r.txt 2>&1
  build/bench/zoo --net alexnet,resnet18,resnet50,vgg16_bn --batch 42 --threads 2 --backend onednn \
      --json $O/zoo-r$r.json > $O/zoo-r$r.txt 2>&1
  build/bench/zoo --net alexnet,resnet18,resnet50,vgg16_bn --backend eigen --no-training --no-pytorch \
      --json $O/zoo-eigen-r$r.json > $O/zoo-eigen-r$r.txt 2>&1
  echo "round $r: $(( $(date +%s) - S )) s" >> $O/rounds.txt
done
echo done >> $O/rounds.txt
