#!/bin/bash
# The zoo's two other networks, MobileNetV2 and ResNeXt-50 (32x4d), whose share of the f32 peak issue 34 asks for
# with every zoo net's: one round a stack, batch 42, 2 threads unbound, training only, PyTorch beside them, huge
# pages `always` (`madvise` again on exit). Run as root from the host's clone after run.sh: other-nets.sh OUT ROOT
set -u
out=$1; R=$2
mkdir -p $out/d12 $out/d13 $R/root/out-other
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
echo always > /sys/kernel/mm/transparent_hugepage/enabled
cmd="build/bench/zoo --net mobilenet_v2,resnext50_32x4d --batch 42 --threads 2 --backend onednn --no-inference"
$cmd --json $out/d12/other-nets.json > $out/d12/other-nets.txt 2>&1
chroot "$R" /usr/bin/env -i HOME=/root PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 \
  TORCHINDUCTOR_CACHE_DIR=/root/inductor-cache bash -c \
  "cd /root/sinew && $cmd --json /root/out-other/other-nets.json > /root/out-other/other-nets.txt 2>&1"
cp $R/root/out-other/* $out/d13/
