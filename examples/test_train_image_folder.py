#!/usr/bin/python3
"""The test of examples/train_image_folder: a newcomer's program, run as a newcomer runs it.

Three steps, each a ctest (examples/CMakeLists.txt), sharing WORK:
  learns   writes a small PNG image folder (4 classes of 24x24 images that differ learnably: stripes across,
           stripes down, a checkerboard, a spot; random colours and noise), trains EPOCHS epochs with a
           checkpoint after each, and requires the held-out accuracy to reach MIN_ACCURACY (chance: 1/4).
  resumes  trains the same run stopped after epoch STOP_AFTER (--stop-after-epoch, as a run killed after that
           checkpoint), resumes it with --resume, and requires the weights file, the losses and the accuracies
           of the epochs after the stop to equal those of the run never stopped, bit for bit.
  pytorch  loads the run's safetensors into the same network written in PyTorch with load_state_dict(strict=True)
           and requires its logits on the program's first 8 held-out images to match sinew's within 1e-4. Exit
           77 (ctest's skip) where /usr/bin/python3 has no torch.

  /usr/bin/python3 examples/test_train_image_folder.py --program build/examples/train_image_folder --work DIR STEP

The images are written with zlib alone (PNG needs nothing more), so only the pytorch step needs packages.
"""

import argparse
import filecmp
import json
import os
import random
import shutil
import struct
import subprocess
import sys
import zlib

CLASSES = ("checker", "down", "across", "spot")  # any order: ImageFolder sorts the folder names
SIDE = 24  # pixels of the files; the program resizes them to 16x16
TRAIN_PER_CLASS, VAL_PER_CLASS = 100, 25
EPOCHS, STOP_AFTER = 4, 2
MIN_ACCURACY = 0.75
TOLERANCE = 1e-4
COMMON = ["--epochs", str(EPOCHS), "--threads", "1", "--workers", "2", "--seed", "3"]


def write_png(path, rows):
    """rows: SIDE rows of SIDE (r, g, b) bytes, as an 8-bit RGB PNG."""
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    raw = b"".join(b"\0" + bytes(v for pixel in row for v in pixel) for row in rows)  # filter 0 on every row
    header = struct.pack(">IIBBBBB", len(rows[0]), len(rows), 8, 2, 0, 0, 0)  # 8 bits, RGB, no interlace
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw)) +
                chunk(b"IEND", b""))


def image(kind, rng):
    """One image of class `kind`: a pattern in a bright colour on a dark one, with noise."""
    ink = [rng.randint(140, 255) for _ in range(3)]
    paper = [rng.randint(0, 90) for _ in range(3)]
    period, phase = rng.choice((6, 8)), rng.randrange(8)
    cy, cx, radius = rng.randint(7, SIDE - 8), rng.randint(7, SIDE - 8), rng.randint(4, 6)

    def inked(y, x):
        if kind == "across":
            return (y + phase) % period < period // 2
        if kind == "down":
            return (x + phase) % period < period // 2
        if kind == "checker":
            return ((y + phase) // (period // 2) + (x + phase) // (period // 2)) % 2 == 0
        return (y - cy) ** 2 + (x - cx) ** 2 <= radius ** 2

    return [[tuple(max(0, min(255, (ink if inked(y, x) else paper)[c] + rng.randint(-20, 20))) for c in range(3))
             for x in range(SIDE)] for y in range(SIDE)]


def make_image_folder(root):
    rng = random.Random(2026)
    shutil.rmtree(root, ignore_errors=True)
    for split, count in (("train", TRAIN_PER_CLASS), ("val", VAL_PER_CLASS)):
        for kind in CLASSES:
            os.makedirs(os.path.join(root, split, kind))
            for i in range(count):
                write_png(os.path.join(root, split, kind, "%03d.png" % i), image(kind, rng))


def train(program, work, run, *extra):
    """Runs the program into WORK/run/; returns its output."""
    out = os.path.join(work, run)
    args = [program, os.path.join(work, "images"), *COMMON, "--checkpoint-dir", os.path.join(out, "checkpoints"),
            "--weights", os.path.join(out, "weights.safetensors"), "--logits", os.path.join(out, "logits.json"),
            "--json", os.path.join(out, "run.json"), *extra]
    print("$", " ".join(args), flush=True)
    p = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    print(p.stdout, flush=True)
    if p.returncode != 0:
        sys.exit("%s ended with exit status %d" % (program, p.returncode))
    return p.stdout


def load(path):
    with open(path) as f:
        return json.load(f)


def learns(program, work):
    make_image_folder(os.path.join(work, "images"))
    shutil.rmtree(os.path.join(work, "full"), ignore_errors=True)
    train(program, work, "full")
    run = load(os.path.join(work, "full", "run.json"))
    epochs = [e["epoch"] for e in run["per_epoch"]]
    assert epochs == list(range(1, EPOCHS + 1)), "epochs %s, expected 1..%d" % (epochs, EPOCHS)
    assert os.path.exists(os.path.join(work, "full", "checkpoints", "checkpoint.json")), "no checkpoint written"
    accuracy = run["test_accuracy"]
    print("held-out accuracy after %d epochs: %.3f (needed: %.2f; chance: %.2f)" %
          (EPOCHS, accuracy, MIN_ACCURACY, 1 / len(CLASSES)))
    assert accuracy >= MIN_ACCURACY, "the network did not learn the image folder"


def resumes(program, work):
    shutil.rmtree(os.path.join(work, "resumed"), ignore_errors=True)
    out = train(program, work, "resumed", "--stop-after-epoch", str(STOP_AFTER))
    assert "stopped after epoch %d" % STOP_AFTER in out
    weights = os.path.join(work, "resumed", "weights.safetensors")
    assert not os.path.exists(weights), "the stopped run wrote its final weights"
    out = train(program, work, "resumed", "--resume")
    assert "resumed from %s after epoch %d of %d" % (os.path.join(work, "resumed", "checkpoints"), STOP_AFTER,
                                                     EPOCHS) in out, "the resume did not start after the stop"
    full, resumed = load(os.path.join(work, "full", "run.json")), load(os.path.join(work, "resumed", "run.json"))
    assert resumed["per_epoch"] == full["per_epoch"][STOP_AFTER:], \
        "epochs after the resume differ from the run never stopped:\n%s\n%s" % (resumed["per_epoch"],
                                                                                full["per_epoch"][STOP_AFTER:])
    assert filecmp.cmp(weights, os.path.join(work, "full", "weights.safetensors"), shallow=False), \
        "the resumed run's weights differ from those of the run never stopped"
    print("resumed after epoch %d: epochs %d..%d and the weights equal the unstopped run's bit for bit" %
          (STOP_AFTER, STOP_AFTER + 1, EPOCHS))


def pytorch(work):
    try:
        import torch
        from torch import nn
    except ImportError:
        print("torch is not installed for %s: skipped" % sys.executable)
        sys.exit(77)
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "reference"))
    import reference_nets as rn

    class Block(nn.Module):  # the program's Block<C, Stride>: torchvision's BasicBlock
        def __init__(self, cin, c, stride):
            super().__init__()
            self.conv1 = nn.Conv2d(cin, c, 3, stride, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(c)
            self.conv2 = nn.Conv2d(c, c, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(c)
            self.downsample = (nn.Sequential(nn.Conv2d(cin, c, 1, stride, bias=False), nn.BatchNorm2d(c))
                               if stride != 1 or cin != c else None)

        def forward(self, x):
            y = self.bn2(self.conv2(torch.relu(self.bn1(self.conv1(x)))))
            return torch.relu(y + (self.downsample(x) if self.downsample is not None else x))

    class Net(nn.Module):  # the program's Net
        def __init__(self, classes):
            super().__init__()
            self.conv1 = nn.Conv2d(3, 16, 3, 1, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(16)
            self.layer1 = nn.Sequential(Block(16, 16, 1))
            self.layer2 = nn.Sequential(Block(16, 32, 2))
            self.fc = nn.Linear(32, classes)

        def forward(self, x):
            x = self.layer2(self.layer1(torch.relu(self.bn1(self.conv1(x)))))
            return self.fc(torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1))

    tensors, _ = rn.read_safetensors(os.path.join(work, "full", "weights.safetensors"))
    net = Net(len(CLASSES))
    net.load_state_dict({k: torch.from_numpy(v.copy()) for k, v in tensors.items()}, strict=True)
    net.eval()
    logits = load(os.path.join(work, "full", "logits.json"))
    images = torch.tensor(logits["images"], dtype=torch.float32).reshape(-1, *logits["shape"])
    with torch.no_grad():
        ours = net(images)
    theirs = torch.tensor(logits["logits"], dtype=torch.float32)
    assert ours.shape == theirs.shape and ours.shape[0] == 8, "shapes %s and %s" % (ours.shape, theirs.shape)
    diff = (ours - theirs).abs().max().item()
    print("PyTorch's logits on %d held-out images against sinew's: max |difference| %.3g (allowed %.0e)" %
          (ours.shape[0], diff, TOLERANCE))
    assert diff <= TOLERANCE, "PyTorch's logits differ from sinew's"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--program", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("step", choices=("learns", "resumes", "pytorch"))
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    if a.step == "learns":
        learns(a.program, a.work)
    elif a.step == "resumes":
        resumes(a.program, a.work)
    else:
        pytorch(a.work)


if __name__ == "__main__":
    main()
