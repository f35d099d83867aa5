#!/bin/bash
# LeNet-5 on 2 threads against where the host had placed the two vCPUs: 30 alternating pairs of the build with the
# update on one thread (kUpdateGrain = 2^15, "serial") and on two (2^12, "parallel"), sinew alone, each run's header
# giving a cache line's round trip between CPUs 0 and 1 before and after it (bench/support/core_latency.hpp).
# Binaries: build/bench/lenet5 of this commit with each grain, copied to /tmp/lenet5.serial and /tmp/lenet5.parallel.
set -eu
here=$(dirname "$0")
: > "$here/pairs.txt"
for r in $(seq 1 30); do
  for arm in serial parallel; do
    out=$(/tmp/lenet5.$arm --batch 42 --threads 2 --repeats 3 --no-pytorch)
    rtt=$(echo "$out" | sed -n 1p | sed -E 's/.* ([0-9]+) ns before, ([0-9]+) ns after/\1 \2/')
    row=$(echo "$out" | sed -n 3p | awk '{print $3, $10, $11, $12}')
    echo "$(date +%T) $r $arm $rtt $row" | tee -a "$here/pairs.txt"
  done
done
