"""train_cifar10 --dataset cifar100 end to end on small CIFAR-100 files this script writes.

    train_cifar100.py TRAIN_CIFAR10 SCRATCH_DIR

The files follow the official binary layout (coarse label byte, fine label byte, 3x32x32 pixels). Coarse label c
(0..3 used of 20) paints the red plane 60c + 20 under noise, so LeNet-5 learns it within a few epochs: the coarse
run must beat chance (25%) by far. The fine labels (c * 5 + k) are noise beyond c, so the fine run only has to
finish with 100 classes; a fine label of 100 must then stop it with an error naming the file and record.
"""
import json
import os
import random
import subprocess
import sys


def write(path, count, rng, bad_record=None):
    out = bytearray()
    for r in range(count):
        coarse = rng.randrange(4)
        fine = 100 if r == bad_record else coarse * 5 + rng.randrange(5)
        out += bytes([coarse, fine])
        out += bytes(min(255, 60 * coarse + 20 + rng.randrange(20)) for _ in range(1024))
        out += bytes(rng.randrange(256) for _ in range(2048))
    with open(path, "wb") as f:
        f.write(out)


def run(tool, directory, labels, loader, json_path, epochs):
    return subprocess.run([tool, directory, "--dataset", "cifar100", "--labels", labels, "--loader", loader,
                           "--net", "lenet5", "--epochs", str(epochs), "--batch", "16", "--lr", "0.01",
                           "--threads", "1", "--json", json_path], capture_output=True, text=True, timeout=300)


def main():
    tool, scratch = sys.argv[1], sys.argv[2]
    os.makedirs(scratch, exist_ok=True)
    rng = random.Random(12)
    write(os.path.join(scratch, "train.bin"), 480, rng)
    write(os.path.join(scratch, "test.bin"), 160, rng)
    failures = []

    coarse_json = os.path.join(scratch, "coarse.json")
    result = run(tool, scratch, "coarse", "streaming", coarse_json, 5)
    if result.returncode != 0:
        failures.append(f"coarse run failed: {result.stderr}")
    else:
        j = json.load(open(coarse_json))
        if "cifar-100 (coarse labels" not in j["config"]["dataset"]:
            failures.append(f"coarse run reports dataset {j['config']['dataset']}")
        if not j["test_accuracy"] > 0.6:
            failures.append(f"coarse run reached {j['test_accuracy']:.3f} test accuracy, expected > 0.6 (chance 0.25)")
        if not j["peak_rss_bytes"] > 0:
            failures.append("no peak_rss_bytes in the JSON")

    fine_json = os.path.join(scratch, "fine.json")
    result = run(tool, scratch, "fine", "cached", fine_json, 1)
    if result.returncode != 0:
        failures.append(f"fine run failed: {result.stderr}")
    elif "100 classes" not in result.stdout and "lenet5 (69656 parameters)" not in result.stdout:
        failures.append(f"fine run did not build the 100-class LeNet-5: {result.stdout}")

    write(os.path.join(scratch, "train.bin"), 48, rng, bad_record=7)
    for loader in ("cached", "streaming"):
        result = run(tool, scratch, "fine", loader, fine_json, 1)
        if result.returncode == 0 or "train.bin: record 7 has fine label 100, expected 0..99" not in result.stderr:
            failures.append(f"{loader}: a fine label of 100 gave exit {result.returncode}: {result.stderr}")

    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
