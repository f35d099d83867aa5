#!/bin/bash
# Issue 34's full-width training rows on both stacks side by side at 7e1a184 (Zen 5, 2 vCPUs; bench/zoo and
# bench/lenet5 time sinew with dist::Local({.update_in_backward = true})): 3 rounds, each
# Debian 12 (the host's build/) then Debian 13 (a fresh trixie root, scripts/check-fresh-machine --suite trixie
# --keep, then scripts/install-deps --bench and cmake --build --preset default --target lenet5 zoo in its clone,
# /root/sinew): bench/lenet5 and bench/zoo's training at batch 42 on 2 threads unbound, PyTorch beside them (1.13
# on Debian 12; 2.6 on Debian 13, the best of eager NCHW, channels_last and torch.compile), transparent huge pages
# `always` (put back to `madvise` on exit), idle machine. Run as root from the host's clone: run.sh OUT [ROOT]
set -u
out=$1; R=${2:-/var/tmp/t78}
mkdir -p $out/d12 $R/root/out-d13
mounted=()
cleanup() {
  for m in "${mounted[@]}"; do umount -l "$m" 2>/dev/null; done
  echo madvise > /sys/kernel/mm/transparent_hugepage/enabled
}
trap cleanup EXIT INT TERM
for d in proc sys dev; do
  if ! mountpoint -q "$R/$d"; then
    case $d in proc) mount -t proc proc "$R/proc" ;; sys) mount -t sysfs sys "$R/sys" ;; dev) mount --bind /dev "$R/dev" ;; esac
    mounted+=("$R/$d")
  fi
done
in_root() {  # a bash command line in the root's clone, with a clean environment
  chroot "$R" /usr/bin/env -i HOME=/root PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    LANG=C.UTF-8 TORCHINDUCTOR_CACHE_DIR=/root/inductor-cache bash -c "cd /root/sinew && $1"
}
echo always > /sys/kernel/mm/transparent_hugepage/enabled
nets=alexnet,resnet18,resnet50,vgg16_bn
for r in 1 2 3; do
  S=$(date +%s)
  build/bench/lenet5 --batch 42 --threads 2 --json $out/d12/lenet5-r$r.json > $out/d12/lenet5-r$r.txt 2>&1
  build/bench/zoo --net $nets --batch 42 --threads 2 --backend onednn --no-inference --json $out/d12/zoo-r$r.json \
      > $out/d12/zoo-r$r.txt 2>&1
  M=$(date +%s)
  in_root "build/bench/lenet5 --batch 42 --threads 2 --json /root/out-d13/lenet5-r$r.json \
             > /root/out-d13/lenet5-r$r.txt 2>&1; \
           build/bench/zoo --net $nets --batch 42 --threads 2 --backend onednn --no-inference \
             --json /root/out-d13/zoo-r$r.json > /root/out-d13/zoo-r$r.txt 2>&1"
  echo "round $r: Debian 12 $(( M - S )) s, Debian 13 $(( $(date +%s) - M )) s" >> $out/rounds.txt
done
mkdir -p $out/d13 && cp $R/root/out-d13/* $out/d13/
