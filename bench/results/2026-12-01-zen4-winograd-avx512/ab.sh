#!/bin/bash
# ab.sh ROUNDS: sinew alone, the two builds alternating which runs first, 40 timed steps each.
o="--net resnet18,resnet50 --batch 42 --threads 2 --backend onednn --no-inference --no-pytorch --steps 40"
cd $(dirname "$0")
for r in $1; do
  if [ $((r % 2)) = 1 ]; then
    /root/zoo-before $o > d13-ab-before-r$r.txt 2>&1; /root/zoo-after $o > d13-ab-after-r$r.txt 2>&1
  else
    /root/zoo-after $o > d13-ab-after-r$r.txt 2>&1; /root/zoo-before $o > d13-ab-before-r$r.txt 2>&1
  fi
done
