#!/bin/bash
# lowered_conv2d_op's one table of copies (c8ee99b) against its parent (018a761), alternating: bench/zoo's child
# alone (sinew, no PyTorch), batch 42, 2 threads unbound, 3 warm-up and 20 timed steps, oneDNN capped to AVX2
# (where the tap form lowers the 3x3 layers on small images; AlexNet's first layer takes the kernel-row form).
set -eu
out=$(dirname "$0")
for i in 1 2 3 4 5; do
  for net in alexnet resnet18 resnet50; do
    for v in base new; do
      bin=$BASE/build/bench/zoo; [ $v = new ] && bin=$NEW/build/bench/zoo
      r=$(ONEDNN_MAX_CPU_ISA=AVX2 $bin --child --net $net --backend onednn --precision f32 --batch 42 --threads 2 \
          --warmup 3 --steps 20 2>&1 | awk '/images_per_second/{print $3}')
      echo "$i $net $v $r"
    done
  done
done | tee "$out/avx2.txt"
