#!/bin/bash
# dist::Local's update inside backward (OneDnn's large fully connected layers, backend/onednn/fused_dense_update.hpp)
# against the update after backward: 5 interleaved rounds on the idle machine, the order alternating, each running
# bench/zoo's training child (batch 42, 2 threads unbound, 5 warm-up and 30 timed steps) for AlexNet (three fused
# layers: 9216->4096, 4096->4096, 4096->1000), ResNet-50 (one: 2048->1000) and ResNet-18 (none: 512->1000 is
# under 2^20 weights, the control) from the build before (BEFORE/build: 6351a78, the update after backward) and
# after (AFTER/build). Run as: run.sh OUT BEFORE AFTER
set -u
out=$1; before=$2; after=$3
mkdir -p $out
for r in 1 2 3 4 5; do
  if [ $((r % 2)) = 1 ]; then order="before after"; else order="after before"; fi
  for net in alexnet resnet50 resnet18; do
    for side in $order; do
      dir=$before; [ $side = after ] && dir=$after
      ips=$($dir/build/bench/zoo --child --net $net --batch 42 --threads 2 --backend onednn --precision f32 \
              --warmup 5 --steps 30 | awk '/images_per_second/{print $3}')
      echo "$r $net $side $ips" >> $out/zoo.txt
    done
  done
done
