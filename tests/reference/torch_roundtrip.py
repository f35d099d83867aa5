#!/usr/bin/python3
"""PyTorch reads sinew's safetensors files into the torchvision models, strictly, and sinew reads PyTorch's.

For each net: the torchvision model with PyTorch's default initialisation, BatchNorm running statistics made
non-trivial and num_batches_tracked = 7, is written as safetensors (torch.safetensors, by this script);
state_dict_roundtrip (C++) loads it into sinew's flat arrays and saves sinew's own file (sinew.safetensors);
a fresh torchvision model loads that with load_state_dict(strict=True), and every tensor must equal the
original bit for bit.

  /usr/bin/python3 tests/reference/torch_roundtrip.py --tool build/tests/state_dict_roundtrip [--dir D] [net ...]

Exit code 77 (ctest's skip) when torch cannot be imported.
"""

import argparse
import os
import subprocess
import sys
import tempfile

try:
    import torch
except ImportError:
    print("torch is not installed: skipped")
    sys.exit(77)

import reference_nets as rn


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tool", required=True)
    ap.add_argument("--dir", default=None)
    ap.add_argument("nets", nargs="*")
    args = ap.parse_args()
    work = args.dir or tempfile.mkdtemp(prefix="sinew_roundtrip_")
    os.makedirs(work, exist_ok=True)
    failures = 0
    for net in args.nets or rn.NETS:
        torch.manual_seed(0)
        model = rn.build(net)
        with torch.no_grad():
            for name, b in model.named_buffers():
                if name.endswith("running_mean"):
                    b.copy_(torch.randn_like(b) * 0.1)
                elif name.endswith("running_var"):
                    b.copy_(torch.rand_like(b) + 0.5)
                else:
                    b.fill_(7)
        original = {k: v.clone() for k, v in model.state_dict().items()}
        src, dst = os.path.join(work, net + ".torch.safetensors"), os.path.join(work, net + ".sinew.safetensors")
        rn.write_safetensors(src, {k: v.numpy() for k, v in original.items()}, {"format": "pt"})
        subprocess.run([args.tool, net, src, dst], check=True)
        tensors, metadata = rn.read_safetensors(dst)
        fresh = rn.build(net)
        fresh.load_state_dict({k: torch.from_numpy(v.copy()) for k, v in tensors.items()}, strict=True)
        loaded = fresh.state_dict()
        bad = [k for k in original if original[k].dtype != loaded[k].dtype or not torch.equal(original[k], loaded[k])]
        status = "OK" if not bad and metadata == {"format": "pt"} else "FAILED %s metadata %s" % (bad[:5], metadata)
        failures += status != "OK"
        print("%s: load_state_dict(strict=True) of sinew's file, %d tensors equal to torchvision's: %s"
              % (net, len(original), status), flush=True)
        os.remove(src)
        os.remove(dst)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
