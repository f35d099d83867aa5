#!/bin/bash
# usage: run.sh ROUNDS NET PRECISION LABEL1 ZOO1 LABEL2 ZOO2 ...: alternating bench/zoo runs, training only, batch 42; prints images/s, share of peak
rounds=$1; net=$2; prec=$3; shift 3
for r in $(seq 1 $rounds); do
  args=("$@")
  for ((i=0;i<${#args[@]};i+=2)); do
    l=${args[i]}; b=${args[i+1]}
    v=$($b --net $net --precision $prec --batch 42 --no-inference --no-pytorch --steps 30 2>&1 | awk -v n=$net '$1==n && $2=="train"{print $7, $13, $16}')
    echo "r$r $l $v"
  done
done
