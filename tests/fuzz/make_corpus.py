#!/usr/bin/env python3
"""Writes the seed corpus of the fuzz targets (tests/fuzz/corpus/<target>/): small valid files of each format.

The files are checked in; this script says how they were made and remakes them: python3 make_corpus.py
"""
import gzip
import json
import pathlib
import struct

HERE = pathlib.Path(__file__).resolve().parent


def put(target, name, data):
    d = HERE / "corpus" / target
    d.mkdir(parents=True, exist_ok=True)
    (d / name).write_bytes(data)


def gz(data):
    return gzip.compress(data, mtime=0)  # mtime 0: the same bytes every run


# IDX: three 2x3 images and their labels, plain and gzip.
images = struct.pack(">IIII", 0x803, 3, 2, 3) + bytes(range(18))
labels = struct.pack(">II", 0x801, 3) + bytes([7, 0, 9])
put("idx", "images", images)
put("idx", "labels", labels)
put("idx", "images.gz", gz(images))
put("idx", "labels.gz", gz(labels))
put("idx", "two-members.gz", gz(images[:10]) + gz(images[10:]))

# CIFAR: two CIFAR-10 records, one CIFAR-100 record, plain and gzip.
pixels = bytes(i % 251 for i in range(3072))
cifar10 = bytes([3]) + pixels + bytes([9]) + pixels[::-1]
cifar100 = bytes([19, 99]) + pixels
put("cifar", "cifar10.bin", cifar10)
put("cifar", "cifar10.bin.gz", gz(cifar10))
put("cifar", "cifar100.bin", cifar100)


# safetensors: the fuzz target's network (fuzz_safetensors.cpp) as sinew and PyTorch write it, and small files.
def safetensors(tensors, metadata=None):
    header, data = {}, b""
    if metadata:
        header["__metadata__"] = metadata
    for name, dtype, shape, raw in tensors:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + data


def f32(shape, start=0.0):
    n = 1
    for e in shape:
        n *= e
    return ("F32", shape, struct.pack("<%df" % n, *[start + 0.25 * i for i in range(n)]))


def bn(prefix, c):
    return [(prefix + ".weight",) + f32([c], 1.0), (prefix + ".bias",) + f32([c]),
            (prefix + ".running_mean",) + f32([c]), (prefix + ".running_var",) + f32([c], 1.0),
            (prefix + ".num_batches_tracked", "I64", [], struct.pack("<q", 5))]


net = ([("stem.weight",) + f32([4, 3, 3, 3])] + bn("bn", 4) + [("blocks.0.conv.weight",) + f32([8, 4, 3, 3])] +
       bn("blocks.0.bn", 8) + [("blocks.0.downsample.0.weight",) + f32([8, 4, 1, 1])] + bn("blocks.0.downsample.1", 8) +
       [("6.weight",) + f32([5, 8]), ("6.bias",) + f32([5])])
put("safetensors", "net.safetensors", safetensors(net, {"format": "pt"}))
put("safetensors", "one-tensor.safetensors", safetensors([("w",) + f32([2, 2])]))
put("safetensors", "empty.safetensors", safetensors([]))


# The hostile files of issue 10, as regression inputs: each must be refused with an error, never crash.
def hostile(target, name, data):
    d = HERE / "regressions" / target
    d.mkdir(parents=True, exist_ok=True)
    (d / ("issue10-" + name)).write_bytes(data)


good = safetensors(net, {"format": "pt"})
n = struct.unpack("<Q", good[:8])[0]
header = good[8:8 + n].rstrip(b" ")
padded = header + b"  "
hostile("safetensors", "header-length-one-short", struct.pack("<Q", len(padded) - 1) + padded + good[8 + n:])
hostile("safetensors", "trailing-bytes", good + b"\0\0\0\0")
dup = header[:-1] + b',"6.bias":{"dtype":"F32","shape":[5],"data_offsets":[0,20]}}'
dup += b" " * (-len(dup) % 8)
hostile("safetensors", "duplicate-key", struct.pack("<Q", len(dup)) + dup + good[8 + n:])
negative = [t if t[0] != "bn.num_batches_tracked" else (t[0], "I64", [], struct.pack("<q", -1)) for t in net]
hostile("safetensors", "negative-count", safetensors(negative))

hostile("idx", "trailing-garbage.gz", gz(images) + b"junk")
hostile("idx", "inflates-past-header.gz", gz(images + bytes(1 << 20)))
hostile("idx", "2-pow-60-bytes", struct.pack(">IIII", 0x803, 1 << 20, 1 << 20, 1 << 20))
hostile("idx", "2-pow-31-labels", struct.pack(">II", 0x801, 1 << 31))
hostile("cifar", "trailing-garbage.gz", gz(cifar10) + b"\0")
hostile("cifar", "truncated.gz", gz(cifar10)[:-9])
