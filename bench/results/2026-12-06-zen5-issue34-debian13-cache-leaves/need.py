"""The share of the AVX2 peak the avx2 preset's build would need to meet each AVX2 goal of issue 34 against the
same round's PyTorch at full width: goal x PyTorch img/s x sinew's performed flops per image / the AVX2 peak read
in the run. Run in this folder: python3 need.py"""
import json
import statistics

GOALS = {"lenet5": 3.0, "alexnet": 1.8, "resnet18": 2.0, "vgg16_bn": 1.6}


def train_rows(path):
    data = json.load(open(path))
    return {r["net"].lower().replace("-", ""): r for r in (data if isinstance(data, list) else [data])
            if r.get("mode", "train") == "train"}


for net, goal in GOALS.items():
    kind = "lenet5" if net == "lenet5" else "zoo"
    need, have = [], []
    for r in (1, 2, 3):
        full = train_rows(f"{kind}-r{r}.json")[net]
        avx2 = train_rows(f"avx2build-{kind}-r{r}.json")[net]
        need.append(goal * full["pytorch_images_per_second"] / avx2["images_per_second"] * avx2["share_of_peak"])
        have.append(avx2["share_of_peak"])
    print(f"{net:9s} goal {goal}x: needs {statistics.median(need):.0%} of the AVX2 peak "
          f"(runs {', '.join(f'{x:.0%}' for x in need)}); runs at {statistics.median(have):.0%}")
