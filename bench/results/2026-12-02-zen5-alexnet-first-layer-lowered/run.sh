#!/bin/bash
# AlexNet's training step before and after lowered_where_gemm_conv2d_op, alternating: BASE is a build of d5d159b
# (the parent of the change), NEW one of the change; bench/zoo's child alone (sinew, no PyTorch), batch 42,
# 2 threads unbound, 3 warm-up and 20 timed steps. `run.sh avx2` caps oneDNN to AVX2 (7 rounds, then one profiled
# step table each); `run.sh full` runs at full ISA (3 rounds; the rule takes no layer there).
set -eu
out=$(dirname "$0")
mode=$1
isa=$([ "$mode" = avx2 ] && echo AVX2 || echo "")
rounds=$([ "$mode" = avx2 ] && echo 7 || echo 3)
for i in $(seq "$rounds"); do
  for v in base new; do
    bin=$BASE/build/bench/zoo; [ $v = new ] && bin=$NEW/build/bench/zoo
    r=$(ONEDNN_MAX_CPU_ISA=$isa $bin --child --net alexnet --backend onednn --precision f32 --batch 42 --threads 2 \
        --warmup 3 --steps 20 2>&1 | awk '/images_per_second/{print $3}')
    echo "$i $v $r"
  done
done | tee "$out/$mode.txt"
if [ "$mode" = avx2 ]; then
  for v in base new; do
    d=$BASE; [ $v = new ] && d=$NEW
    ONEDNN_MAX_CPU_ISA=AVX2 $d/build/bench/zoo --net alexnet --batch 42 --threads 2 --backend onednn \
        --no-inference --no-pytorch --profile > "$out/profile-$v.txt" 2>&1
  done
fi
