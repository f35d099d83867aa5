#!/bin/bash
# The update inside backward against the update after it, AlexNet (3x64x64, batch 42, 2 threads unbound), with
# where the guest's two vCPUs lie read before each round: bench/lenet5's cache line round trip between the first two
# CPUs (about 80 ns when they share a cache, 350-420 ns when they do not). Huge pages `always` (madvise after).
# d12-flag.txt is this script on the host's build. d12-toggle.txt and d13-toggle.txt (the host; the trixie root's
# clone) ran the same loop before --update-in-backward existed, on a scratch build of 6207e4f whose
# bench/support/train_step.hpp read `.update_in_backward = !std::getenv("SINEW_NO_UIB")` (rows "uib" and "no").
# Run from a clone with build/ built: ab.sh ROUNDS > FILE
set -u
echo always > /sys/kernel/mm/transparent_hugepage/enabled
trap 'echo madvise > /sys/kernel/mm/transparent_hugepage/enabled' EXIT
for r in $(seq 1 "${1:-4}"); do
  rt=$(build/bench/lenet5 --batch 42 --threads 2 --no-pytorch --steps 20 --repeats 1 --warmup 2 2>&1 |
       grep -o "round trip[^;]*" | grep -o "[0-9]* ns before")
  for m in "" "--update-in-backward"; do
    v=$(build/bench/zoo --child --net alexnet --batch 42 --threads 2 --backend onednn --precision f32 --warmup 5 \
          --steps 30 $m 2>&1 | grep images_per_second | cut -d" " -f3)
    echo "$r [$rt] ${m:-after} $v"
  done
done
