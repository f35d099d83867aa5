#!/bin/bash
# dist::Local's update during backward, before and after: 5 interleaved rounds on the idle machine, each running
# bench/zoo's training child (batch 42, 2 threads unbound, 5 warm-up and 30 timed steps) for AlexNet, ResNet-18,
# ResNet-50 and VGG-16-BN from the build before (BEFORE/build: 247bdd1, the update after backward) and after
# (AFTER/build: local.patch applied to 247bdd1), the order alternating. Run as: run.sh OUT BEFORE AFTER
set -u
out=$1; before=$2; after=$3
mkdir -p $out
for r in 1 2 3 4 5; do
  if [ $((r % 2)) = 1 ]; then order="before after"; else order="after before"; fi
  for net in alexnet resnet18 resnet50 vgg16_bn; do
    for side in $order; do
      dir=$before; [ $side = after ] && dir=$after
      ips=$($dir/build/bench/zoo --child --net $net --batch 42 --threads 2 --backend onednn --precision f32 \
              --warmup 5 --steps 30 | awk '/images_per_second/{print $3}')
      echo "$r $net $side $ips" >> $out/zoo.txt
    done
  done
done
