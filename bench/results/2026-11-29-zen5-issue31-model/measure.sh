#!/bin/bash
# The model's validation set: bench/cluster.py's all-reduce and parameter-server tables (1 rank a host, 2 and 3
# emulated hosts, 1 and 10 Gbit/s, 4 KiB to 16 MiB), or with `dist` its bench/dist step table, REPEATS times, each
# session beside a record of the machine's contention while it ran (load.json, by contention.py: the other
# processes' runnable threads, weighted by their nice values, sampled every 0.2 s), which the model takes as the
# threads competing for the cores. Needs root (network namespaces). Run from the repository root after building
# bench/comm (and bench/dist for `dist`):
#   bench/results/2026-11-29-zen5-issue31-model/measure.sh OUT [REPEATS] [dist [LINK]]
set -euo pipefail
here=$(dirname "$0")
out=${1:?usage: measure.sh OUT [REPEATS] [dist [LINK]]}; repeats=${2:-3}
for r in $(seq 1 "$repeats"); do
  if [[ ${3:-} == dist ]]; then
    # bench/dist's ResNet-18 steps (ring, MPI, parameter server sync/async/staleness 2) on 3 hosts at LINK
    link=${4:-1gbit}; dir=$out/dist-$link-s$r; mkdir -p "$dir"
    what=(--links none --dist-link "$link" --dist-hosts 3 --dist-steps 10); mine=dist,orted,mpirun,prted,prterun
  else
    dir=$out/comm-s$r; mkdir -p "$dir"
    what=(--links 1gbit,10gbit --hosts 2,3 --no-dist --min 4096 --max 16777216 --iterations 10)
    mine=comm,orted,mpirun,prted,prterun
  fi
  /usr/bin/python3 "$here/contention.py" "$dir/load.json" --mine "$mine" &
  sampler=$!
  SINEW_CLUSTER=model /usr/bin/python3 bench/cluster.py --build build "${what[@]}" --out "$dir" > "$dir/log.txt" 2>&1 ||
    echo "session $r failed"
  kill $sampler; wait $sampler || true
done
