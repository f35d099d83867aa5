"""The zoo nets as torchvision builds them, the weight formula that sinew's tests compute too, and the
safetensors format read and written with json + numpy (Debian has no safetensors package).

Shared by make_golden.py and torch_roundtrip.py; run with /usr/bin/python3 (Debian's python3-torch 1.13 and
python3-torchvision 0.14).
"""

import json
import os
import struct
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "bench", "pytorch"))

NUM_CLASSES = 10
BATCH = 4
NETS = ("lenet5", "resnet18", "resnet18_cifar", "resnet34", "resnet50", "alexnet", "vgg16", "vgg16_bn",
        "mobilenet_v2", "resnext50_32x4d")
# the others: 3x32x32. MobileNetV2 at 96x96 ends on 3x3 maps (1x1 at 32x32); of 64, 96, 128 and 160 there PyTorch's
# float32 gradients come nearest the float64 ones (8.4e-3 in the metric of the C++ test; 1.8e-2 to 4.5e-2 elsewhere).
INPUT_SHAPE = {"lenet5": (3, 32, 32), "alexnet": (3, 64, 64), "mobilenet_v2": (3, 96, 96)}
# Small nets of one layer form each, beside the zoo: grouped, depthwise and dilated convolutions (layers/conv2d.hpp).
NETS += ("grouped_dilated",)
INPUT_SHAPE["grouped_dilated"] = (3, 16, 16)


def input_shape(net):
    return INPUT_SHAPE.get(net, (3, 32, 32))


def build(net):
    """The torchvision model (train mode). Dropout is p = 0 (torchvision's `dropout` argument) so that sinew,
    whose masks come from its own generator, computes the same function in training mode."""
    if net in LAYER_NETS:
        return LAYER_NETS[net]().train()
    import torch.nn as nn
    import torchvision.models as tvm

    if net == "lenet5":
        import lenet5
        model = lenet5.build_model(nn)
    elif net == "resnet18_cifar":
        model = tvm.resnet18(num_classes=NUM_CLASSES)
        model.conv1 = nn.Conv2d(3, 64, 3, 1, 1, bias=False)
        model.maxpool = nn.Identity()
    elif net in ("resnet18", "resnet34", "resnet50", "resnext50_32x4d"):
        model = getattr(tvm, net)(num_classes=NUM_CLASSES)
    elif net == "alexnet":
        model = tvm.alexnet(num_classes=NUM_CLASSES, dropout=0.0)
    elif net in ("vgg16", "vgg16_bn", "mobilenet_v2"):
        model = getattr(tvm, net)(num_classes=NUM_CLASSES, dropout=0.0)
    else:
        raise SystemExit("unknown net %r; one of %s" % (net, ", ".join(NETS)))
    return model.train()


def grouped_dilated():
    """A dilated convolution, a depthwise one and a grouped dilated one at stride 2, as sinew's test declares them
    (tests/nets/test_lenet5_alexnet_vgg.cpp): nn.Sequential numbers every layer, as sinew's Sequential does."""
    import torch.nn as nn

    return nn.Sequential(nn.Conv2d(3, 8, 3, 1, 2, dilation=2), nn.BatchNorm2d(8), nn.ReLU(),
                         nn.Conv2d(8, 8, 3, 1, 1, groups=8, bias=False), nn.ReLU(),
                         nn.Conv2d(8, 12, 3, 2, 2, dilation=2, groups=4), nn.BatchNorm2d(12), nn.ReLU(),
                         nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(12, NUM_CLASSES))


LAYER_NETS = {"grouped_dilated": grouped_dilated}


# ---- the formula (tests/support/torchvision_golden.hpp computes the same, bit for bit) ----

M64 = np.uint64(0xFFFFFFFFFFFFFFFF)


def mix64(x):
    """sinew's mix64 (splitmix64's finaliser) on a uint64 array; numpy's uint64 arithmetic wraps."""
    with np.errstate(over="ignore"):
        x = x + np.uint64(0x9E3779B97F4A7C15)
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return x ^ (x >> np.uint64(31))


def fnv1a(name):
    h = 0xCBF29CE484222325
    for b in name.encode():
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def uniform(name, count, start=0):
    """u in [-1, 1) for elements [start, start + count) of tensor `name`: 24 bits of mix64(hash ^ mix64(i))."""
    i = np.arange(start, start + count, dtype=np.uint64)
    z = mix64(np.uint64(fnv1a(name)) ^ mix64(i))
    k = (z >> np.uint64(40)).astype(np.int64)
    return (k - 8388608).astype(np.float64) / 8388608.0


def formula(name, shape):
    """The value of every element of state_dict tensor `name` (float32, or int64 0 for num_batches_tracked):
    conv and linear weights U(-b, b) with b = sqrt(6 / fan_in) (kaiming, so activations stay O(1)); biases
    0.1 u; BatchNorm weight 1 + 0.1 u, running_mean 0.1 u, running_var 1 + 0.1 u; the input images u."""
    if name.endswith("num_batches_tracked"):
        return np.zeros(shape, dtype=np.int64)
    n = int(np.prod(shape, dtype=np.int64))
    out = np.empty(n, dtype=np.float32)
    chunk = 1 << 22
    for s in range(0, n, chunk):
        u = uniform(name, min(chunk, n - s), s)
        if name.endswith(".weight") and len(shape) >= 2:
            v = u * np.sqrt(6.0 / float(n // shape[0]))
        elif name.endswith(".weight") or name.endswith(".running_var"):
            v = 1.0 + u * 0.1
        else:  # bias, running_mean, input
            v = u * (1.0 if name == "input" else 0.1)
        out[s:s + len(v)] = v.astype(np.float32)
    return out.reshape(shape)


def labels():
    return [(i * 7 + 3) % NUM_CLASSES for i in range(BATCH)]


# ---- safetensors ----

DTYPES = {"F32": np.float32, "I64": np.int64, "F64": np.float64, "F16": np.float16}


def write_safetensors(path, tensors, metadata=None):
    """tensors: name -> numpy array (float32 or int64), written in name order."""
    header, blobs, offset = {}, [], 0
    if metadata:
        header["__metadata__"] = metadata
    for name in sorted(tensors):
        a = np.asarray(tensors[name])  # not ascontiguousarray: it makes a scalar (num_batches_tracked) 1-d
        dtype = {np.dtype(np.float32): "F32", np.dtype(np.int64): "I64"}[a.dtype]
        b = a.astype(a.dtype.newbyteorder("<")).tobytes()
        header[name] = {"dtype": dtype, "shape": list(a.shape), "data_offsets": [offset, offset + len(b)]}
        blobs.append(b)
        offset += len(b)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)  # the data starts 8-byte aligned, as the reference writer pads
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


def read_safetensors(path):
    """name -> numpy array, and the metadata (or None)."""
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    metadata = header.pop("__metadata__", None)
    base = 8 + n
    out = {}
    for name, t in header.items():
        begin, end = t["data_offsets"]
        dtype = np.dtype(DTYPES[t["dtype"]]).newbyteorder("<")
        out[name] = np.frombuffer(data[base + begin:base + end], dtype=dtype).reshape(t["shape"])
    return out, metadata
