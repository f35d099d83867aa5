#!/bin/bash
# ResNet-50's oneDNN primitives, one verbose run on each stack minutes apart: `run.sh d12` on the Debian 12 host,
# `run.sh d13` in the trixie root; both at 7d8ce20's code (bench/zoo's child: batch 42, 2 threads, 3 warm-up + 5
# timed steps), then primitives.py over the logs (left out of the folder: half a megabyte each).
set -u
out=$(dirname "$0")
ONEDNN_VERBOSE=1 build/bench/zoo --child --net resnet50 --batch 42 --threads 2 --backend onednn --precision f32 \
    --warmup 3 --steps 5 > /tmp/resnet50-$1-verbose.log 2>&1
# then, with both logs on one machine:
#   primitives.py /tmp/resnet50-d12-verbose.log 5 0.375 480 30 > lost-debian12.txt   (and d13, lost-debian13.txt)
#   primitives.py --diff /tmp/resnet50-d12-verbose.log /tmp/resnet50-d13-verbose.log 5 0.375 25 > diff.txt
