#!/bin/bash
# Three interleaved rounds on an idle Zen 3 (2 cores) inside a Debian 13 root (scripts/check-fresh-machine --suite
# trixie --keep, then scripts/install-deps --bench in it): the lowered convolutions (NEW, with PyTorch 2.6 beside
# it) and the build before them (OLD, 27c05f3, sinew alone), training at batch 42 on 2 threads. Round 1 compiles
# torch.compile's candidates into an empty inductor cache; rounds 2 and 3 reuse it.
# usage: run.sh NEW_ZOO OLD_ZOO OUTDIR
set -eu
new=$1 old=$2 out=$3
nets=alexnet,vgg16_bn,resnet50,resnet18
mkdir -p "$out"
rm -rf /root/inductor-cache && mkdir -p /root/inductor-cache
export TORCHINDUCTOR_CACHE_DIR=/root/inductor-cache
for r in 1 2 3; do
  S=$(date +%s)
  "$new" --net $nets --batch 42 --threads 2 --no-inference --json "$out/after-$r.json" > "$out/after-$r.txt" 2>&1
  "$old" --net $nets --batch 42 --threads 2 --no-inference --no-pytorch --json "$out/before-$r.json" > "$out/before-$r.txt" 2>&1
  echo "round $r: $(( $(date +%s) - S )) s" >> "$out/rounds.txt"
done
