#!/bin/bash
# Each shape in its own process (a division by zero kills it), in three layouts: N IC IH OC K S PAD. Build:
# g++ -std=c++20 -O1 conv.cpp -ldnnl -o conv; run: shapes.sh ./conv
bin=$1
while read -r shape; do
  for l in any nhwc nchw; do
    r=$($bin $shape $l 2>&1 | tail -1); [ $? ] ; echo "$shape $l: ${r:0:160}"
  done
done <<'S'
42 512 4 1024 1 2 0
42 256 8 512 1 2 0
42 1024 2 2048 1 2 0
42 1024 14 2048 1 2 0
42 512 28 1024 1 2 0
42 256 56 512 1 2 0
42 512 4 1024 1 1 0
42 512 4 512 3 2 1
1 512 4 1024 1 2 0
S
