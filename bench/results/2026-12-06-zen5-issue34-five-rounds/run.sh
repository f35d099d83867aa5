#!/bin/bash
# Issue 34's full-width training rows and the CIFAR-stem ResNet-18 rows on both stacks side by side at one head
# (Zen 5, 2 vCPUs), 5 rounds where the rows of record had 3: each round Debian 12 (the host's build/) then Debian
# 13 (a fresh trixie root: scripts/check-fresh-machine --suite trixie --keep, then scripts/install-deps --bench and
# cmake --build --preset default --target lenet5 zoo in its clone, /root/sinew). A stack's part of a round:
# bench/lenet5, bench/zoo's training of AlexNet, ResNet-18, ResNet-50 and VGG-16-BN, and the CIFAR-stem ResNet-18
# in f32 and bf16 (PyTorch f32 and bf16 autocast beside it), batch 42 on 2 threads unbound; PyTorch 1.13 on Debian
# 12 (eager NCHW, channels_last), 2.6 on Debian 13 (those and torch.compile; round 1 compiles into an empty
# inductor cache). Transparent huge pages `always` (`madvise` again on exit), idle machine.
# Run as root from the host's clone: run.sh OUT ROOT
set -u
out=$1; R=$2
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
# One stack's part of round $1, its files under $2 (a path as the stack sees it).
stack_round() {
  local r=$1 o=$2
  build/bench/lenet5 --batch 42 --threads 2 --json $o/lenet5-r$r.json > $o/lenet5-r$r.txt 2>&1
  build/bench/zoo --net alexnet,resnet18,resnet50,vgg16_bn --batch 42 --threads 2 --backend onednn --no-inference \
      --json $o/zoo-r$r.json > $o/zoo-r$r.txt 2>&1
  build/bench/zoo --net resnet18_cifar --batch 42 --threads 2 --precision f32,bf16 --no-inference \
      --json $o/zoo-cifar-r$r.json > $o/zoo-cifar-r$r.txt 2>&1
}
in_root "rm -rf /root/inductor-cache && mkdir -p /root/inductor-cache"
echo always > /sys/kernel/mm/transparent_hugepage/enabled
for r in 1 2 3 4 5; do
  S=$(date +%s)
  stack_round $r $out/d12
  M=$(date +%s)
  in_root "$(declare -f stack_round); stack_round $r /root/out-d13"
  echo "round $r: Debian 12 $(( M - S )) s, Debian 13 $(( $(date +%s) - M )) s" >> $out/rounds.txt
done
mkdir -p $out/d13 && cp $R/root/out-d13/* $out/d13/
