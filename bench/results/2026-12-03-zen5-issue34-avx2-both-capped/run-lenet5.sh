#!/bin/bash
# LeNet-5 alone, 5 more rounds of run.sh's first line on Debian 13 (its median sat on the 3x line), into
# d13-lenet5/: the avx2 build under the same caps, PyTorch 2.6 reusing run.sh's inductor cache. Run from the
# repository root in the trixie root, after run.sh d13.
set -u
out=$(dirname "$0")/d13-lenet5
mkdir -p $out
export ONEDNN_MAX_CPU_ISA=AVX2 ATEN_CPU_CAPABILITY=avx2 OPENBLAS_CORETYPE=Haswell
export TORCHINDUCTOR_CACHE_DIR=/root/inductor-cache-avx2
for r in 1 2 3 4 5; do
  S=$(date +%s)
  build-avx2/bench/lenet5 --batch 42 --threads 2 --json $out/lenet5-r$r.json > $out/lenet5-r$r.txt 2>&1
  echo "d13 lenet5 round $r: $(( $(date +%s) - S )) s" >> $out/rounds.txt
done
