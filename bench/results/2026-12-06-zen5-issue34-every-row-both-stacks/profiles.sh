#!/bin/bash
# The operator tables behind the shares of the peak that miss 70% (after run.sh, same head, same roots): one profiled
# run of each such net per stack, Debian 12 then Debian 13, huge pages `always` as in run.sh's training rows:
# bench/zoo's training child with --profile (the top operator kinds and the eight slowest layers of a separately
# profiled run) and bench/lenet5 --profile. Run as root from the host's clone: profiles.sh OUT ROOT
set -u
out=$1; R=$2
mkdir -p $out/profiles $R/root/out-d13-profiles
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
in_root() {
  chroot "$R" /usr/bin/env -i HOME=/root PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    LANG=C.UTF-8 bash -c "cd /root/sinew && $1"
}
profile() {  # $1: where the files go, as the stack sees it
  local o=$1
  for net in alexnet resnet50 vgg16_bn; do
    build/bench/zoo --child --net $net --batch 42 --threads 2 --backend onednn --precision f32 --warmup 5 \
        --steps 20 --profile > $o/$net.txt 2>&1
  done
  build/bench/lenet5 --batch 42 --threads 2 --no-pytorch --profile > $o/lenet5.txt 2>&1
}
echo always > /sys/kernel/mm/transparent_hugepage/enabled
mkdir -p $out/profiles/d12 $out/profiles/d13
profile $out/profiles/d12
in_root "$(declare -f profile); profile /root/out-d13-profiles"
cp $R/root/out-d13-profiles/* $out/profiles/d13/
