#!/usr/bin/python3
"""Writes the shards `bench/loaders --shards` reads: the first --images CIFAR-10 training images, upscaled to
--size x --size (bilinear, PIL) and saved as JPEG (quality 90) in an ImageFolder-layout folder (one folder per
class), then packed by scripts/pack-shards into shards of --per-shard samples. ImageNet-sized images from data
that is at hand: what is measured is decoding, cropping and batching, not what the pictures show.

  bench/make_shards.py --cifar ../shared/data/cifar-10-batches-bin --out /tmp/cifar-shards [--images 4096]
"""
import argparse
import os
import subprocess
import sys

from PIL import Image


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cifar", required=True, help="the cifar-10-batches-bin directory")
    p.add_argument("--out", required=True, help="writes OUT/folder (the JPEGs) and OUT/shards")
    p.add_argument("--images", type=int, default=4096)
    p.add_argument("--size", type=int, default=256)
    p.add_argument("--per-shard", type=int, default=256)
    args = p.parse_args()
    folder = os.path.join(args.out, "folder")
    written = 0
    for batch in range(1, 6):
        if written == args.images:
            break
        with open(os.path.join(args.cifar, f"data_batch_{batch}.bin"), "rb") as f:
            records = f.read()
        for r in range(len(records) // 3073):
            if written == args.images:
                break
            record = records[r * 3073:(r + 1) * 3073]
            label, planes = record[0], record[1:]
            pixels = bytes(planes[c * 1024 + i] for i in range(1024) for c in range(3))
            image = Image.frombytes("RGB", (32, 32), pixels).resize((args.size, args.size), Image.BILINEAR)
            os.makedirs(os.path.join(folder, str(label)), exist_ok=True)
            image.save(os.path.join(folder, str(label), f"{written:06d}.jpg"), quality=90)
            written += 1
    pack = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts", "pack-shards")
    subprocess.run([sys.executable, pack, folder, os.path.join(args.out, "shards"), "--per-shard",
                    str(args.per_shard)], check=True)


if __name__ == "__main__":
    main()
