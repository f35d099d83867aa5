#!/bin/bash
# AlexNet (3x64x64, batch 42, 2 threads unbound), three ways interleaved, with where the guest's two vCPUs lie read
# before each round (bench/lenet5's cache line round trip between them): the update after backward (HEAD's zoo), the
# update inside backward as HEAD has it (each block's matmuls on both threads, split oneDNN's way), and inside
# backward with each thread computing and updating its own rows of every block (row-split.patch applied).
# Huge pages `always` (madvise after). Run from a clone with build/ built at HEAD:
#   ab3.sh ZOO_HEAD ZOO_ROWSPLIT ROUNDS > FILE
set -u
head=$1 rows=$2
echo always > /sys/kernel/mm/transparent_hugepage/enabled
trap 'echo madvise > /sys/kernel/mm/transparent_hugepage/enabled' EXIT
for r in $(seq 1 "${3:-4}"); do
  rt=$(build/bench/lenet5 --batch 42 --threads 2 --no-pytorch --steps 20 --repeats 1 --warmup 2 2>&1 |
       grep -o "round trip[^;]*" | grep -o "[0-9]* ns before")
  for way in "after $head" "inside $head --update-in-backward" "rows $rows --update-in-backward"; do
    set -- $way
    name=$1 zoo=$2; shift 2
    v=$($zoo --child --net alexnet --batch 42 --threads 2 --backend onednn --precision f32 --warmup 5 \
          --steps 30 "$@" 2>&1 | grep images_per_second | cut -d" " -f3)
    echo "$r [$rt] $name $v"
  done
done
