#!/usr/bin/python3
"""PyTorch's DataLoader over WebDataset-layout tar shards, the anchor of `bench/loaders --shards`: an
IterableDataset that reads each of its worker's shards (worker i of W takes shards i, i + W, ...) with tarfile,
decodes with PIL, applies torchvision's RandomResizedCrop(224) and RandomHorizontalFlip, ToTensor and Normalize,
batched by DataLoader with --workers workers (0: in the main process), no training. Prints "result KEY VALUE"
lines: images_per_second over the batches after the first --warmup, peak_rss_bytes of the main process and
worker_peak_rss_bytes, the largest worker's.

  bench/pytorch/shards.py --shards DIR --workers 2 [--batch 64] [--batches 0 (all)] [--warmup 2]
"""
import argparse
import glob
import io
import os
import resource
import sys
import tarfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--shards", required=True, help="the folder of shard-NNNNNN.tar files")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--batches", type=int, default=0, help="batches read (0: one pass over the shards)")
    p.add_argument("--warmup", type=int, default=2, help="batches not timed")
    p.add_argument("--size", type=int, default=224)
    args = p.parse_args()
    torch = common.import_torch()
    import torchvision.transforms as T
    from PIL import Image

    torch.set_num_threads(1)
    shards = sorted(glob.glob(os.path.join(args.shards, "*.tar")))
    if not shards:
        sys.exit(f"shards.py: {args.shards} holds no .tar files")
    transform = T.Compose([T.RandomResizedCrop(args.size), T.RandomHorizontalFlip(), T.ToTensor(),
                           T.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])])

    class Shards(torch.utils.data.IterableDataset):
        def __iter__(self):
            info = torch.utils.data.get_worker_info()
            mine = shards if info is None else shards[info.id::info.num_workers]
            for path in mine:
                with tarfile.open(path, "r|") as tar:  # a stream: one sequential pass, as sinew reads
                    image, label, key = None, None, None
                    for member in tar:
                        if not member.isfile():
                            continue
                        k, _, ext = member.name.partition(".")
                        if k != key:
                            key, image, label = k, None, None
                        data = tar.extractfile(member).read()
                        if ext in ("jpg", "jpeg", "png"):
                            image = data
                        elif ext == "cls":
                            label = int(data)
                        if image is not None and label is not None:
                            yield transform(Image.open(io.BytesIO(image)).convert("RGB")), label
                            image, label = None, None

    loader = torch.utils.data.DataLoader(Shards(), batch_size=args.batch, num_workers=args.workers,
                                         drop_last=True, persistent_workers=False)
    count, timed, start = 0, 0, None
    for images, labels in loader:
        count += 1
        if count == args.warmup:
            start = time.perf_counter()
        elif count > args.warmup:
            timed += images.shape[0]
        if args.batches and count >= args.batches:
            break
    elapsed = time.perf_counter() - start if start is not None else 0.0
    print("result images_per_second %.6g" % (timed / elapsed if elapsed > 0 else 0.0))
    print("result peak_rss_bytes %d" % common.peak_rss_bytes())
    print("result worker_peak_rss_bytes %d" % (resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024))


if __name__ == "__main__":
    main()
