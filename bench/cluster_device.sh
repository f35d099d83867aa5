#!/bin/bash
# bench/cluster_device.sh: the hierarchical all-reduce on a 16-core machine, as root, in under 10 minutes:
# 4 hosts x 4 ranks (scripts/cluster, links shaped to 10 Gbit/s), sizes 25 KiB to 25 MiB, the flat ring, the
# ring's hierarchical transport, MPI_Allreduce and coll/han (where Open MPI lists it) next to their alpha-beta
# bounds and the bounds' prediction at 8 hosts x 16 ranks (bench/cluster.py --device; bench/README.md).
# The goal (issue 33): the hierarchical transport >= 1.5x the flat ring at 25 MiB.
#
#   bench/cluster_device.sh [OUT]     (OUT: where comm.md and results.json go; default $OUT or bench-out)
#
# Builds only bench/comm (configuring ./build if there is none): a few minutes on 16 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-${OUT:-bench-out}}
mkdir -p "$out"
{
  echo "cores: $(nproc); $(lscpu | grep -m1 'Model name' | sed 's/  */ /g')"
  mpirun --version | head -1
  ompi_info | grep -E "MCA coll: (han|tuned)" || true
} | tee "$out/machine.txt"
[[ -f build/build.ninja ]] || cmake --preset default > "$out/configure.log"
cmake --build build --target comm -j "$(nproc)" > "$out/build.log"
timeout 480 /usr/bin/python3 bench/cluster.py --device --iterations 10 --out "$out" 2>&1 | tee "$out/cluster.log"
