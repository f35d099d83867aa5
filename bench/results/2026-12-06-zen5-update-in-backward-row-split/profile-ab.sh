#!/bin/bash
# The round trip between the vCPUs, then one profiled run of AlexNet with the update after and inside
# backward: the update's, the two large fully connected layers' backward and every other layer's ms a step.
# Run from a clone with build/ built: profile-ab.sh ROUNDS
set -u
echo always > /sys/kernel/mm/transparent_hugepage/enabled
trap 'echo madvise > /sys/kernel/mm/transparent_hugepage/enabled' EXIT
for r in $(seq 1 "${1:-4}"); do
  rt=$(build/bench/lenet5 --batch 42 --threads 2 --no-pytorch --steps 20 --repeats 1 --warmup 2 2>&1 |
       grep -o "round trip[^;]*" | grep -o "[0-9]* ns before")
  for m in "" "--update-in-backward"; do
    o=$(build/bench/zoo --child --net alexnet --batch 42 --threads 2 --backend onednn --precision f32 --warmup 5 \
          --steps 20 --profile $m 2>&1)
    ips=$(echo "$o" | grep images_per_second | cut -d" " -f3)
    upd=$(echo "$o" | grep "operator weights_update" | awk '{print $3}')
    fc=$(echo "$o" | grep -E "layer (11|13) dense" | sed -E 's/.*backward ([0-9.]+) ms.*/\1/' | tr '\n' ' ')
    conv=$(echo "$o" | grep -E "^operator layer" | grep -v dense |
           sed -E 's/.*forward ([0-9.]+) ms.*backward ([0-9.]+) ms.*/\1 \2/' | awk '{s+=$1+$2} END {print s}')
    echo "$r [$rt] ${m:-after} ips $ips update $upd fc_bwd $fc other_layers $conv"
  done
done
