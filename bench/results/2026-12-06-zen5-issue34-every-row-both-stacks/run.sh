#!/bin/bash
# Every row issue 34 asks for, on both stacks side by side at one head (Zen 5, 2 vCPUs): 3 rounds, each Debian 12
# (the host's build/ and build-avx2/) then Debian 13 (a fresh trixie root: scripts/check-fresh-machine --suite
# trixie --keep, then scripts/install-deps --bench and the default and avx2 presets' lenet5, zoo and dist in its
# clone, /root/sinew). A stack's part of a round is that of ../2026-12-06-zen5-issue34-debian13-cache-leaves:
# LeNet-5, the zoo's training at batch 42 on 2 threads unbound and its single-thread inference, the CIFAR-stem
# ResNet-18 in f32 and bf16, ResNet-50 in f32 and bf16 (sinew alone), LeNet-5 and the zoo's training with oneDNN
# capped to AVX2 on the default build and from the avx2 preset's build (PyTorch of the same round as it runs is the
# anchor of both AVX2 rows); round 1 also the Eigen backend's single-thread inference. Transparent huge pages
# `always` for those. Then the DDP row, 3 rounds, each Debian 12 then Debian 13: bench/dist's ring against PyTorch's
# DDP over Gloo, ResNet-18, 2 ranks x 1 thread bound to a core each by mpirun, huge pages `madvise` (as every DDP
# row before). PyTorch: 1.13 on Debian 12 (eager NCHW, channels_last), 2.6 on Debian 13 (those and torch.compile;
# round 1 compiles into an empty inductor cache). Idle machine. Run as root from the host's clone: run.sh OUT ROOT
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
    LANG=C.UTF-8 TORCHINDUCTOR_CACHE_DIR=/root/inductor-cache OMPI_ALLOW_RUN_AS_ROOT=1 \
    OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 bash -c "cd /root/sinew && $1"
}
# One stack's part of round $1, its files under $2 (a path as the stack sees it).
stack_round() {
  local r=$1 o=$2 nets=alexnet,resnet18,resnet50,vgg16_bn
  build/bench/lenet5 --batch 42 --threads 2 --json $o/lenet5-r$r.json > $o/lenet5-r$r.txt 2>&1
  build/bench/zoo --net $nets --batch 42 --threads 2 --backend onednn --json $o/zoo-r$r.json > $o/zoo-r$r.txt 2>&1
  build/bench/zoo --net resnet18_cifar --batch 42 --threads 2 --precision f32,bf16 --no-inference \
      --json $o/zoo-cifar-r$r.json > $o/zoo-cifar-r$r.txt 2>&1
  build/bench/zoo --net resnet50 --batch 42 --threads 2 --precision f32,bf16 --no-inference --no-pytorch \
      --json $o/resnet50-bf16-r$r.json > $o/resnet50-bf16-r$r.txt 2>&1
  ONEDNN_MAX_CPU_ISA=AVX2 build/bench/lenet5 --batch 42 --threads 2 --no-pytorch \
      --json $o/avx2-lenet5-r$r.json > $o/avx2-lenet5-r$r.txt 2>&1
  ONEDNN_MAX_CPU_ISA=AVX2 build/bench/zoo --net $nets --batch 42 --threads 2 --backend onednn --no-inference \
      --no-pytorch --json $o/avx2-zoo-r$r.json > $o/avx2-zoo-r$r.txt 2>&1
  ONEDNN_MAX_CPU_ISA=AVX2 build-avx2/bench/lenet5 --batch 42 --threads 2 --no-pytorch \
      --json $o/avx2build-lenet5-r$r.json > $o/avx2build-lenet5-r$r.txt 2>&1
  ONEDNN_MAX_CPU_ISA=AVX2 build-avx2/bench/zoo --net $nets --batch 42 --threads 2 --backend onednn --no-inference \
      --no-pytorch --json $o/avx2build-zoo-r$r.json > $o/avx2build-zoo-r$r.txt 2>&1
  if [ "$r" = 1 ]; then
    build/bench/zoo --net $nets --backend eigen --no-training --no-pytorch \
        --json $o/eigen-inference.json > $o/eigen-inference.txt 2>&1
  fi
}
export -f stack_round
in_root "rm -rf /root/inductor-cache && mkdir -p /root/inductor-cache"
echo always > /sys/kernel/mm/transparent_hugepage/enabled
for r in 1 2 3; do
  S=$(date +%s)
  stack_round $r $out/d12
  M=$(date +%s)
  in_root "$(declare -f stack_round); stack_round $r /root/out-d13"
  echo "round $r: Debian 12 $(( M - S )) s, Debian 13 $(( $(date +%s) - M )) s" >> $out/rounds.txt
done
echo madvise > /sys/kernel/mm/transparent_hugepage/enabled
for r in 1 2 3; do
  S=$(date +%s)
  build/bench/dist --only ring --ranks 2 --threads 1 --batch 42 --bind core \
      --json $out/d12/ddp-r$r.json > $out/d12/ddp-r$r.txt 2>&1
  M=$(date +%s)
  in_root "build/bench/dist --only ring --ranks 2 --threads 1 --batch 42 --bind core \
             --json /root/out-d13/ddp-r$r.json > /root/out-d13/ddp-r$r.txt 2>&1"
  echo "DDP round $r: Debian 12 $(( M - S )) s, Debian 13 $(( $(date +%s) - M )) s" >> $out/rounds.txt
done
mkdir -p $out/d13 && cp $R/root/out-d13/* $out/d13/
