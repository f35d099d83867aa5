#!/bin/bash
# PyTorch 2.6's training with and without THP_MEM_ALLOC_ENABLE=1 (its allocator asks for huge pages for buffers
# of 2 MB and more), under the host's huge page mode $1 (set outside the root): 2 alternating rounds.
# (ResNet-50 in the madvise rounds, ResNet-18 in the always ones: the script was edited between them.)
out=/root/s72/thp; mkdir -p $out; mode=$1
for r in 1 2; do
  for net in alexnet resnet18; do
    for env in 0 1; do
      if [ $env = 1 ]; then export THP_MEM_ALLOC_ENABLE=1; else unset THP_MEM_ALLOC_ENABLE; fi
      /usr/bin/python3 bench/pytorch/zoo.py --net $net --batch 42 --threads 2 --compile off \
        > $out/$mode-$net-env$env-r$r.txt 2>&1
      echo "$mode $net env=$env r$r $(grep -E 'images_per_second_(nchw|channels_last)' $out/$mode-$net-env$env-r$r.txt | tr '\n' ' ')"
    done
  done
done
