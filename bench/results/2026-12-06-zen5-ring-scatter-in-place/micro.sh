#!/bin/bash
# inplace.cpp's two builds (see its head), interleaved, 2 ranks bound to a core each, ResNet-18's 11,181,648
# gradient floats, 30 timed calls a run, 5 rounds on the idle machine. Usage: micro.sh OLD NEW
set -u
for r in 1 2 3 4 5; do
  for v in old new; do
    bin=$1; [ $v = new ] && bin=$2
    echo "$v r$r: $(mpirun -np 2 --bind-to core "$bin" 11181648 30 2>&1 | tail -1)"
  done
done
