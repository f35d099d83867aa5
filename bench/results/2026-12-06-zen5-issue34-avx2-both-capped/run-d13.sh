#!/bin/bash
# run.sh's rows on Debian 13 (GCC 14.2, oneDNN 3.7.2, PyTorch 2.6.0: best of eager NCHW, channels_last and
# torch.compile), in a fresh trixie root (scripts/check-fresh-machine --suite trixie --keep, then
# scripts/install-deps --bench and `cmake --preset avx2 && cmake --build --preset avx2 --target zoo lenet5` in its
# clone, /root/sinew). Debian 13's PyTorch runs Debian's oneDNN 3.7.2 but its own kernels at AVX-512, so
# ATEN_CPU_CAPABILITY=avx2 caps those (and torch.compile's generated code, which follows it) beside
# ONEDNN_MAX_CPU_ISA=AVX2; its fully connected layers run Debian's OpenBLAS, which takes its Cooperlake (AVX-512)
# kernels here, so OPENBLAS_CORETYPE=Haswell caps them (Debian 12's OpenBLAS takes Haswell by itself). The first
# run lacked that cap (d13-openblas-cooperlake/). Run as root from the host's clone: run-d13.sh OUT ROOT (OUT as
# the host sees it)
set -u
out=$1; R=$2
mkdir -p "$out" "$R/root/out-capped"
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
chroot "$R" /usr/bin/env -i HOME=/root PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  LANG=C.UTF-8 TORCHINDUCTOR_CACHE_DIR=/root/inductor-cache ONEDNN_MAX_CPU_ISA=AVX2 ATEN_CPU_CAPABILITY=avx2 \
  OPENBLAS_CORETYPE=Haswell bash -c 'cd /root/sinew && o=/root/out-capped && for r in 1 2 3; do
    build-avx2/bench/lenet5 --batch 42 --threads 2 --json $o/lenet5-r$r.json > $o/lenet5-r$r.txt 2>&1
    build-avx2/bench/zoo --net alexnet,resnet18,resnet50,vgg16_bn --batch 42 --threads 2 --backend onednn \
        --no-inference --json $o/zoo-r$r.json > $o/zoo-r$r.txt 2>&1
  done'
cp "$R"/root/out-capped/* "$out"/
