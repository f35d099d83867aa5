#!/usr/bin/python3
"""PyTorch's Gloo all-reduce (torch.distributed, CPU tensors, TCP on loopback): latency and bus bandwidth.

Started by bench/comm's rank 0 so that its figures come from the same run as sinew's ring and MPI_Allreduce, with the
same rank count and binding: --bind core pins process r to CPU r (as mpirun --bind-to core does), --bind none
leaves placement to the kernel. Each figure is the median of --iterations calls after 5 warm-up calls, every call
preceded by a barrier; the slowest rank's time counts. Prints "result BYTES SECONDS" lines.

Usage: /usr/bin/python3 bench/pytorch/gloo_allreduce.py --ranks 2 [--bind core] [--min 4096] [--max 67108864]
       [--iterations 50]
Exit code 3 if torch cannot be imported.
"""

import argparse
import os
import socket
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def worker(rank, args, port):
    import torch
    import torch.distributed as dist
    if args.bind == "core":
        os.sched_setaffinity(0, {rank % os.cpu_count()})
    torch.set_num_threads(1)
    common.init_gloo(dist, port, rank, args.ranks)
    size = args.min
    while size <= args.max:
        data = torch.ones(size // 4)
        times = []
        for i in range(5 + args.iterations):
            dist.barrier()
            start = time.perf_counter()
            dist.all_reduce(data)
            elapsed = torch.tensor([time.perf_counter() - start], dtype=torch.float64)
            dist.all_reduce(elapsed, op=dist.ReduceOp.MAX)
            if i >= 5:
                times.append(elapsed.item())
        if rank == 0:
            print("result %d %.9g" % (size, statistics.median(times)), flush=True)
        size *= 4
    dist.destroy_process_group()


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--bind", choices=("core", "none"), default="core")
    p.add_argument("--min", type=int, default=4096)
    p.add_argument("--max", type=int, default=64 * 1024 * 1024)
    p.add_argument("--iterations", type=int, default=50)
    args = p.parse_args()
    if args.ranks < 2 or args.min < 4 or args.max < args.min or args.iterations < 1:
        raise SystemExit("need --ranks >= 2, 4 <= --min <= --max and --iterations >= 1")
    torch = common.import_torch()
    import torch.multiprocessing as mp
    print("info torch %s, gloo, %d ranks, bind %s" % (torch.__version__, args.ranks, args.bind), flush=True)
    mp.spawn(worker, args=(args, free_port()), nprocs=args.ranks, join=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
