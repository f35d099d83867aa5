#!/bin/bash
# Builds first_layer.cpp and runs 7 rounds with oneDNN capped to AVX2 (2 threads, unbound), then 3 at full ISA.
set -eu
cd "$(dirname "$0")"
g++ -O2 -fopenmp -std=c++17 first_layer.cpp -o /tmp/first_layer -ldnnl
for i in 1 2 3 4 5 6 7; do ONEDNN_MAX_CPU_ISA=AVX2 OMP_NUM_THREADS=2 /tmp/first_layer; done | tee avx2.txt
for i in 1 2 3; do OMP_NUM_THREADS=2 /tmp/first_layer; done | tee full-isa.txt
