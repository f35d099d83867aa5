#!/bin/bash
# MobileNetV2 training before (fc44b1f) and after (6c83e1a: the depthwise weight-gradient pass's sums in a buffer set
# up once instead of a vector per thread per layer per step), 3 rounds, the order alternating, each with PyTorch
# 1.13 beside it. BEFORE and AFTER are the two builds' bench/zoo; transparent huge pages set to "always" by hand.
set -u
out=$(dirname "$0"); before=$1; after=$2
for r in 1 2 3; do
  S=$(date +%s)
  if [ $((r % 2)) = 1 ]; then order="before after"; else order="after before"; fi
  for b in $order; do
    bin=$before; [ $b = after ] && bin=$after
    $bin --net mobilenet_v2 --batch 42 --threads 2 --backend onednn --no-inference --json $out/$b-r$r.json \
        > $out/$b-r$r.txt 2>&1
  done
  echo "round $r: $(( $(date +%s) - S )) s" >> $out/rounds.txt
done
