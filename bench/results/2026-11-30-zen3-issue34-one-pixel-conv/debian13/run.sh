#!/bin/bash
# Issue 34 on Debian 13 (Zen 3, AVX2; in a trixie root made by scripts/check-fresh-machine --suite trixie --keep,
# python3-torch 2.6 added): the same rounds as ../debian12/run.sh. Run inside the root, in its clone at f104dc4;
# /root/zoo-before is bench/zoo built there at 79b9cad. PyTorch 2.6's best of eager NCHW, channels_last and
# torch.compile beside the new build.
set -u
O=${1:-/root/out}
mkdir -p $O
for r in 1 2 3; do
  S=$(date +%s)
  build/bench/zoo --net resnet50,resnet18 --batch 42 --threads 2 --backend onednn --no-inference \
      --json $O/after-r$r.json > $O/after-r$r.txt 2>&1
  /root/zoo-before --net resnet50,resnet18 --batch 42 --threads 2 --backend onednn --no-inference --no-pytorch \
      --json $O/before-r$r.json > $O/before-r$r.txt 2>&1
  echo "round $r: $(( $(date +%s) - S )) s" >> $O/rounds.txt
done
build/bench/zoo --net resnet50,resnet18 --batch 42 --threads 2 --backend onednn --no-inference --no-pytorch \
    --profile > $O/profile.txt 2>&1
echo done >> $O/rounds.txt
