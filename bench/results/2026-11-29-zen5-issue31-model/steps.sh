#!/bin/bash
# LeNet-5 steps for the model's step validation: SYSTEM's paper target (build/bench/paper/paper_SYSTEM_lenet5_cifar10)
# on 1 rank alone (the compute profile), then on 2 emulated hosts at 1 and 10 Gbit/s and 3 hosts at 1 Gbit/s, one
# rank a host, 1 thread, 3 epochs of generated CIFAR-10 (20000 images: 238 steps an epoch on 2 workers), REPEATS
# times interleaved; contention.py samples the machine's contention meanwhile (NAME.load.json, as measure.sh). Then
# annotate_steps.py merges the repeats into records the model reads. Needs root.
#   bench/results/2026-11-29-zen5-issue31-model/steps.sh OUT SYSTEM [REPEATS]
set -u
here=$(dirname "$0")
out=${1:?usage: steps.sh OUT SYSTEM [REPEATS]}; sys=${2:?system}; repeats=${3:-3}
bin=$PWD/build/bench/paper/paper_${sys}_lenet5_cifar10
runs=$out/runs; mkdir -p "$runs"
name="paper_${sys}_lenet5_cifar10"
mine="${name:0:15},orted,mpirun,prted,prterun"  # /proc/PID/stat cuts a name at 15 characters
export SINEW_CLUSTER=mstep
common=(--epochs 3 --batch 42 --threads 1 --generated-dir "$out/generated" --generated-samples 20000)
for r in $(seq 1 "$repeats"); do
  /usr/bin/python3 "$here/contention.py" "$runs/$sys-1x1-none-r$r.load.json" --mine "$mine" &
  s=$!
  mpirun --allow-run-as-root -np 1 --bind-to none -x OMP_NUM_THREADS=1 "$bin" "${common[@]}" \
    --binding "none (1 rank)" --json "$runs/$sys-1x1-none-r$r.json" > /dev/null 2>&1 || echo "FAILED 1x1 r$r"
  kill $s; wait $s
  for cfg in 2:1gbit 2:10gbit 3:1gbit; do
    h=${cfg%%:*}; link=${cfg##*:}; name=$sys-${h}x1-$link-r$r
    scripts/cluster down > /dev/null 2>&1
    scripts/cluster up "$h" --bandwidth "$link" > /dev/null || { echo "cluster up failed"; continue; }
    /usr/bin/python3 "$here/contention.py" "$runs/$name.load.json" --mine "$mine" &
    s=$!
    scripts/cluster run -- mpirun -np "$h" -x OMP_NUM_THREADS=1 "$bin" "${common[@]}" \
      --binding "none (emulated hosts share 2 cores)" --json "$runs/$name.json" > /dev/null 2>&1 || echo "FAILED $name"
    kill $s; wait $s
    scripts/cluster down > /dev/null 2>&1
  done
done
