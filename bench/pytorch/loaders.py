"""PyTorch's DataLoader over CIFAR-10's binary records, the anchor of bench/loaders (run with /usr/bin/python3).

A torch Dataset reads record i of the data_batch_*.bin files by offset (os.pread on a descriptor each worker
process opens for itself), as sinew's StreamingLoader does, and applies the same transforms: RandomCrop(32,
padding=4), RandomHorizontalFlip, then float / 255 and Normalize with CIFAR-10's statistics. DataLoader
(shuffle, drop_last, --workers processes) feeds LeNet-5 or torchvision's resnet18(num_classes=10) trained with
SGD (momentum 0.9) on --threads threads. Prints "result KEY VALUE" lines: images_per_second over the batches
after the first 10, waited (seconds the loop spent in next() over all batches, the first included, as sinew's
trainer counts its load phase; the paper's loading phase), peak_rss_bytes of the
training process and worker_peak_rss_bytes, the largest worker's (workers share the parent's pages copy-on-write,
so the two do not add up).
"""
import argparse
import os
import resource
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

RECORD = 3073
WARMUP = 10


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--data", required=True)
    p.add_argument("--net", default="lenet5", choices=["lenet5", "resnet18"])
    p.add_argument("--workers", type=int, default=0)
    p.add_argument("--files", type=int, default=5)
    p.add_argument("--batches", type=int, default=200)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--threads", type=int, default=2)
    args = p.parse_args()

    torch = common.import_torch()
    import torchvision
    import torchvision.transforms as T
    common.setup_threads(torch, args.threads)
    torch.manual_seed(1234)

    files = [os.path.join(args.data, "data_batch_%d.bin" % i) for i in range(1, args.files + 1)]
    counts = [os.path.getsize(f) // RECORD for f in files]
    starts = [sum(counts[:i]) for i in range(len(counts))]
    mean = torch.tensor([0.4914, 0.4822, 0.4465]).view(3, 1, 1)
    std = torch.tensor([0.2470, 0.2435, 0.2616]).view(3, 1, 1)
    augment = T.Compose([T.RandomCrop(32, padding=4), T.RandomHorizontalFlip()])

    class CifarRecords(torch.utils.data.Dataset):
        def __init__(self):
            self.fds = None  # opened in each worker process

        def __len__(self):
            return sum(counts)

        def __getitem__(self, i):
            if self.fds is None:
                self.fds = [os.open(f, os.O_RDONLY) for f in files]
            f = max(k for k in range(len(starts)) if starts[k] <= i)
            record = os.pread(self.fds[f], RECORD, (i - starts[f]) * RECORD)
            image = torch.frombuffer(bytearray(record[1:]), dtype=torch.uint8).view(3, 32, 32)
            image = augment(image).float().div_(255).sub_(mean).div_(std)
            return image, record[0]

    loader = torch.utils.data.DataLoader(CifarRecords(), batch_size=args.batch, shuffle=True, drop_last=True,
                                         num_workers=args.workers,
                                         # fork, as on Linux by default up to Python 3.13 (3.14 starts forkserver,
                                         # which cannot pickle this local Dataset class)
                                         multiprocessing_context="fork" if args.workers > 0 else None)
    nn = torch.nn
    if args.net == "lenet5":
        model = nn.Sequential(nn.Conv2d(3, 6, 5), nn.Tanh(), nn.AvgPool2d(2), nn.Conv2d(6, 16, 5), nn.Tanh(),
                              nn.AvgPool2d(2), nn.Flatten(), nn.Linear(400, 120), nn.Tanh(), nn.Linear(120, 84),
                              nn.Tanh(), nn.Linear(84, 10))
    else:
        model = torchvision.models.resnet18(num_classes=10)
    model.train()
    loss_fn = nn.CrossEntropyLoss()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

    it = iter(loader)
    waited, start, steps = 0.0, None, 0
    while steps < args.batches:
        if steps == WARMUP:
            start = time.perf_counter()
        t0 = time.perf_counter()
        try:
            x, y = next(it)
        except StopIteration:
            break
        waited += time.perf_counter() - t0
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()
        steps += 1
    elapsed = time.perf_counter() - start if start is not None else 0.0
    del it  # ends the worker processes, so that RUSAGE_CHILDREN counts them
    timed = steps - WARMUP
    print("info torch %s, torchvision %s, %d workers" % (torch.__version__, torchvision.__version__, args.workers))
    print("result images_per_second %.6g" % (timed * args.batch / elapsed if elapsed > 0 else 0.0))
    print("result waited %.6g" % waited)
    print("result peak_rss_bytes %d" % common.peak_rss_bytes())
    print("result worker_peak_rss_bytes %d" % (resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024))
    return 0


if __name__ == "__main__":
    sys.exit(main())
