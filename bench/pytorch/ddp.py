#!/usr/bin/python3
"""PyTorch DistributedDataParallel with Gloo: training images/s of a torchvision ResNet on 3x32x32, for bench/dist.

--ranks processes on this host (torch.multiprocessing, TCP rendezvous on loopback), each with --threads intra-op
threads and --batch images per step (global batch = ranks x batch), pinned to CPU r when --bind core (as mpirun
--bind-to core does). A step is zero_grad + forward + CrossEntropyLoss + backward (DDP's bucketed all-reduce
overlapping it, 25 MB buckets) + SGD(lr=0.01, momentum=0.9).step, on one fixed synthetic batch per rank.
The same steps are then timed inside model.no_sync() (no gradient all-reduce at all): the difference is the
communication the step waited for. Prints "result KEY VALUE" lines from rank 0.

Usage: /usr/bin/python3 bench/pytorch/ddp.py [--net resnet18] [--ranks 2] [--threads 1] [--batch 42] [--bind core]
       [--warmup 10] [--steps 30]
Exit code 3 if torch cannot be imported.
"""

import argparse
import os
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

NETS = {"resnet18": 11181642, "resnet50": 23528522}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def worker(rank, args, port):
    import torch
    import torch.distributed as dist
    import torchvision.models as models
    if args.bind == "core":
        os.sched_setaffinity(0, {rank % os.cpu_count()})
    common.setup_threads(torch, args.threads)
    common.init_gloo(dist, port, rank, args.ranks)
    torch.manual_seed(1234)
    model = getattr(models, args.net)(num_classes=10)
    assert sum(p.numel() for p in model.parameters()) == NETS[args.net]
    ddp = torch.nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.01, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()
    g = torch.Generator().manual_seed(1234 + rank)
    x = torch.randn(args.batch, 3, 32, 32, generator=g)
    y = torch.randint(0, 10, (args.batch,), generator=g)

    def step():
        opt.zero_grad()
        loss_fn(ddp(x), y).backward()
        opt.step()

    def timed(sync):
        for _ in range(args.warmup):
            step()
        dist.barrier()
        start = time.perf_counter()
        for _ in range(args.steps):
            if sync:
                step()
            else:
                with ddp.no_sync():
                    step()
        elapsed = torch.tensor([time.perf_counter() - start], dtype=torch.float64)
        dist.all_reduce(elapsed, op=dist.ReduceOp.MAX)
        return elapsed.item() / args.steps

    with_comm = timed(True)
    without = timed(False)
    if rank == 0:
        images = args.ranks * args.batch
        print("result images_per_second %.9g" % (images / with_comm), flush=True)
        print("result step_seconds %.9g" % with_comm, flush=True)
        print("result step_seconds_without_allreduce %.9g" % without, flush=True)
        print("result exposed_comm_fraction %.9g" % max(0.0, (with_comm - without) / with_comm), flush=True)
        print("result peak_rss_bytes %.9g" % common.peak_rss_bytes(), flush=True)
    # Gloo's teardown (destroy_process_group) hung one rank here after the figures were out; the results are
    # printed, so each rank leaves once all have got here.
    dist.barrier()
    sys.stdout.flush()
    os._exit(0)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--net", choices=sorted(NETS), default="resnet18")
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--batch", type=int, default=42)
    p.add_argument("--bind", choices=("core", "none"), default="core")
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--steps", type=int, default=30)
    args = p.parse_args()
    if args.ranks < 1 or args.threads < 1 or args.batch < 1 or args.steps < 1 or args.warmup < 0:
        raise SystemExit("--ranks/--threads/--batch/--steps must be >= 1 and --warmup >= 0")
    torch = common.import_torch()
    import torch.multiprocessing as mp
    # The workers are spawned after import_torch() asked for huge pages, so they inherit THP_MEM_ALLOC_ENABLE.
    print("info torch %s, BLAS %s, DDP over gloo, %d ranks x %d threads, bind %s" %
          (torch.__version__, common.blas_and_pages(torch), args.ranks, args.threads, args.bind), flush=True)
    mp.spawn(worker, args=(args, free_port()), nprocs=args.ranks, join=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
