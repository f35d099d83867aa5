#!/usr/bin/python3
"""bench/paper/model.py: a calibrated performance model of one data-parallel training step (issue 31, item 4).

    /usr/bin/python3 bench/paper/model.py --validate RUNS_DIR... [--out DIR]      predicted vs measured, figure
    /usr/bin/python3 bench/paper/model.py --predict-paper [--calibration DIR/calibration.json] [--out DIR]
    /usr/bin/python3 bench/paper/model.py --predict-scaling [--calibration ...] [--out DIR]
    /usr/bin/python3 bench/paper/model.py --predict RECORD.json --hosts 3 --cores 4 --link 10gbit [--strategy ring]

Inputs. A compute profile: load, forward, backward and update seconds per step of one worker on C cores (from a
run_matrix.py record, or Compute(...) by hand), scaled to T threads by Amdahl's law with a serial fraction
(Compute.serial_fraction; 0.1 unless given: this host has 2 cores, too few to fit it) and slowed by the
oversubscription factor when a host runs more threads than it has cores. The link: alpha (s) and beta (s/byte),
from a record's "link", fitted on ping-pong times (fit_alpha_beta), or nominal (Link.named). The strategy's
schedule (Schedule.kind):

  ring            sinew's RingAllReduce over p ranks: 2 (p - 1) steps of n / p bytes; with ranks placed host by host
                  each step puts one segment on each host's link
  mpi_allreduce   MPI_Allreduce as Open MPI 4.1's coll/tuned picks it for a commutative sum (its fixed decision
                  table by communicator size and bytes): recursive doubling (log2 p' steps of n, +2 steps of n when
                  p is not a power of two), ring or segmented ring (as above), Rabenseifner (2 (p' - 1) / p' n in
                  2 log2 p' steps, + 2 n when p is not a power of two); with nonblocking (dist::MpiAllReduce's
                  MPI_Iallreduce), as Open MPI 4.1's libnbc picks it: a binomial reduce and broadcast (2 ceil(log2
                  p) rounds of n) under 4 ranks or 64 KiB, else Rabenseifner
  hierarchical    shared memory within a host (a reduce and a broadcast of n through the host's memory), then K
                  rings across the h hosts, one per place, each of n / K: a host's link carries 2 (h - 1) / h n
  parameter_server  S servers (shard n / S each), W workers, sync or async: push then pull; each phase lasts as
                  long as the busiest NIC (a server's NIC takes W_remote n / S, a worker's sends n_remote, and
                  colocated ranks add up on their host's NIC); the servers' updates of their shards sit between
                  push and pull; async: the same traffic (the model has no stragglers to wait for), but a server
                  steps once for each worker's gradient
  local           no communication

bucket_bytes (all-reduce strategies) overlaps the wire time with backward: exposed = max(last bucket's wire,
wire - backward's overlappable part), where backward produces the buckets evenly; where the CPU sets the
communication's pace (copies, sums, TCP) nothing hides, as backward holds the cores. compression (the
Compressed<...> strategies) gathers every rank's compressed payload (bytes_on_wire_per_step) in p - 1 steps.

Calibration. Measured communication times fit (grids, then local searches, on squared log error)
    t = max(e_k x wire, g x cpu_bytes x stretch(c)) + m x o_k
with e_k and o_k each implementation's (k in ring, mpi_allreduce, hierarchical, parameter_server) and g and the
contention weight (below) the machine's, shared by all, so that an implementation measured only where the link
sets the pace still gets a CPU cost;
wire: the schedule's alpha-beta time along its critical path (less what a shaper's burst lets through at once);
m: its messages; cpu_bytes: the bytes a rank sends and receives (copies, sums and the TCP stack), averaged over the
ranks that share the cores; c: the host's oversubscription ((its ranks' threads + w x other processes' runnable
threads) / cores, w the fitted contention weight), which stretches CPU work longer than a scheduler tick and
barely touches shorter work. The
link and the CPU work as a pipeline: the slower sets the pace. e_k near 1 means the implementation meets its
alpha-beta schedule. Emulated links (scripts/cluster) are read as tc shapes them (rate x 1448 / 1514 of payload,
a 96 KiB burst), and the contention of each session from its load.json (contention.py in the results folder).
--validate fits on the stable points only (repeats within 25% of each other, a criterion fixed before any fit)
and reports both the in-sample error and the held-out one (each configuration predicted by constants fitted
without it: leave one configuration out); only the held-out one counts for the goal.

Output: predicted seconds per step and its breakdown: compute (load + forward + backward + update), exposed
communication and hidden communication (what overlapped backward).

What the model leaves out: contention inside the machine beyond the oversubscription factor (memory bandwidth,
caches, the kernel's network stack serving several ranks, Open MPI yielding its polling ranks), stragglers and OS
noise (a synchronous step waits for the slowest worker: the model has every worker at the mean, so asynchronous and
synchronous parameter servers differ only by the servers' updates), the parameter server's compute beyond its
shard's update, TCP's slow start, retransmissions and the shaper's queue (a message of a few hundred KiB can stall
for a scheduler tick), congestion in a switch (every host's link is its own), the loader's threads competing with
compute, and compression's encode and decode time. Its constants are fitted on one machine (AMD EPYC Zen 5, 2
cores, emulated hosts): on another, refit them (--validate writes calibration.json) before trusting a prediction.

Python's standard library and matplotlib only (matplotlib only for the figures).
"""

import argparse
import dataclasses
import glob
import json
import math
import os
import re
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import run_matrix  # noqa: E402 (its findings() judge the model's predictions for the paper's testbed too)
ROOT = os.path.dirname(os.path.dirname(HERE))
KINDS = ["ring", "mpi_allreduce", "hierarchical", "parameter_server"]
DEFAULT_BUCKET_BYTES = 1 << 20  # dist/buckets.hpp: kDefaultBucketBytes
SHM_BYTE_WEIGHT = 0.25         # a byte through the hierarchical ring's shared window, in TCP bytes' CPU cost
EMULATED_BURST = 96 * 1024     # scripts/cluster's tbf burst (96kb): what an emulated link passes unshaped
PAPER_STEPS = 396 * 10          # Table IV: 396 steps an epoch, 10 epochs
# Table V (Krisilias et al. 2021): mean communication time, seconds (their total minus load, forward and
# backward), over the CIFAR-10 experiments.
PAPER_TABLE5 = {("tensorflow", "sync"): 1741.81, ("pytorch", "sync"): 869.51, ("mxnet", "sync"): 546.19,
                ("tensorflow", "async"): 586.65, ("mxnet", "async"): 410.54}


# ---------------------------------------------------------------------------------------------------------------
# The inputs.

@dataclasses.dataclass
class Link:
    """A host's link: alpha seconds a message, beta seconds a byte (both directions each carry this)."""
    name: str
    alpha: float
    beta: float
    burst: float = 0.0  # bytes a call gets through before the shaper's rate applies (tc tbf's bucket; 0: a real NIC)

    @staticmethod
    def named(name, alpha=None, beta=None):
        """1gbit, 10gbit, 100mbit ... at their nominal rate (alpha 0 unless given); none: no network (one host)."""
        if name == "none":
            return Link("none", 0.0, 0.0)
        rate = rate_bytes_per_second(name)
        return Link(name, alpha or 0.0, beta if beta is not None else 1.0 / rate)


def rate_bytes_per_second(name):
    units = {"gbit": 1e9, "mbit": 1e6, "kbit": 1e3, "bit": 1.0}
    for unit, scale in units.items():
        if name.lower().endswith(unit):
            try:
                return float(name[:-len(unit)]) * scale / 8
            except ValueError:
                break
    raise ValueError(f"model: cannot read the link rate '{name}': write it as tc does, e.g. 1gbit or 100mbit")


@dataclasses.dataclass
class Placement:
    """hosts x (workers_per_host workers + servers_per_host servers), each rank threads_per_rank threads on a host
    of cores_per_host cores (fractional when emulated hosts share a machine's cores). roles, when given, lists
    (workers, servers) per host instead (bench/comm's parameter server: the last host only serves)."""
    hosts: int
    workers_per_host: int = 1
    servers_per_host: int = 0
    cores_per_host: float = 1.0
    threads_per_rank: int = 1
    roles: list = None
    background: float = 0.0  # threads of other processes running on each host (they compete for its cores)

    def host_roles(self):
        return self.roles or [(self.workers_per_host, self.servers_per_host)] * self.hosts

    def workers(self):
        return sum(w for w, _ in self.host_roles())

    def servers(self):
        return sum(s for _, s in self.host_roles())

    def oversubscription(self, contention=1.0):
        """How many times over the busiest host's cores are asked for (a server counts one thread; the other
        processes' threads count `contention` each): >= 1."""
        busiest = max(w * self.threads_per_rank + s for w, s in self.host_roles())
        return max(1.0, (busiest + contention * self.background) / self.cores_per_host)


@dataclasses.dataclass
class Schedule:
    kind: str                      # ring | mpi_allreduce | hierarchical | parameter_server | local
    sync: str = "sync"             # sync | async | bounded (parameter_server)
    servers: int = 1
    bucket_bytes: float = None     # overlap backward in buckets of this size; None: no overlap
    compression: str = "none"
    wire_bytes: float = None       # bytes a rank sends per step when compressed
    nonblocking: bool = False      # mpi_allreduce: MPI_Iallreduce (libnbc's algorithms), as dist::MpiAllReduce calls


@dataclasses.dataclass
class Compute:
    """One worker's step on `threads` threads: seconds per step by phase."""
    load: float
    forward: float
    backward: float
    update: float
    threads: int = 1
    serial_fraction: float = 0.1
    oversubscription: float = 1.0  # how oversubscribed the run that measured it was (its times carry it)
    measured_on: "Placement" = None  # the measuring run's placement, when known (then it gives oversubscription)

    def scaled(self, threads, oversubscription=1.0, contention=1.0):
        """On `threads` threads (Amdahl: the load phase stays serial), on a host `oversubscription` times over its
        cores (the times stretch by it, relative to the measuring run's own)."""
        f = self.serial_fraction
        rel = (f + (1 - f) / threads) / (f + (1 - f) / self.threads)
        own = self.measured_on.oversubscription(contention) if self.measured_on else self.oversubscription
        s = oversubscription / own
        return Compute(self.load * s, self.forward * rel * s, self.backward * rel * s, self.update * rel * s,
                       threads, f, oversubscription)

    def total(self):
        return self.load + self.forward + self.backward + self.update


@dataclasses.dataclass
class Calibration:
    """Per implementation: e (times the alpha-beta wire time), o (seconds a message), g (seconds a byte of CPU, the
    same for all after fit()); contention: the weight of another process's runnable thread."""
    constants: dict = dataclasses.field(default_factory=lambda: {k: (1.0, 0.0, 0.0) for k in KINDS})
    contention: float = 1.0  # how much of a thread each of the other processes' runnable threads competes with

    def of(self, kind):
        return self.constants.get(kind, (1.0, 0.0, 0.0))

    def to_json(self):
        out = {k: dict(zip(["wire_factor", "message_seconds", "cpu_seconds_per_byte"], v))
               for k, v in self.constants.items()}
        out["contention"] = self.contention
        return out

    @staticmethod
    def from_json(data):
        return Calibration({k: (v["wire_factor"], v["message_seconds"], v["cpu_seconds_per_byte"])
                            for k, v in data.items() if k in KINDS}, data.get("contention", 1.0))


# ---------------------------------------------------------------------------------------------------------------
# The schedules: wire time (alpha-beta), messages and CPU bytes of one rank per step.

@dataclasses.dataclass
class Terms:
    wire: float       # seconds on the links (alpha-beta) along the schedule's critical path
    messages: float   # messages along the critical path
    cpu_bytes: float  # bytes a rank copies or reduces (the CPU's share)
    steps: int = 1    # steps of the schedule (for buckets: the last bucket's share)
    link_bytes: float = 0.0  # bytes through the busiest NIC along the critical path (what a shaper's burst spares)


def ring_terms(p, h, n, link, chunks=1):
    """2 (p - 1) steps of n / p; placed host by host, a step puts one segment on each host's link when h > 1."""
    if p <= 1:
        return Terms(0.0, 0.0, 0.0)
    seg = n / p
    per_step = (link.alpha + seg * link.beta) if h > 1 else 0.0
    return Terms(2 * (p - 1) * per_step, 2 * (p - 1) * chunks, 4 * (p - 1) * seg, 2 * (p - 1),
                 2 * (p - 1) * seg if h > 1 else 0.0)


def mpi_algorithm(p, n):
    """Open MPI 4.1 coll/tuned's fixed decision for a commutative MPI_Allreduce of n bytes over p ranks."""
    if p < 4:
        table = [(4096, "recursive_doubling"), (8192, "ring"), (16384, "recursive_doubling"), (65536, "ring"),
                 (262144, "segmented_ring")]
    elif p < 16:
        table = [(8192, "recursive_doubling")]
    elif p < 32:
        table = [(4096, "recursive_doubling")]
    elif p < 64:
        table = [(128, "segmented_ring")]
    else:
        table = [(262144, "recursive_doubling")]
    for limit, name in table:
        if n < limit:
            return name
    return "rabenseifner"


def nbc_algorithm(p, n):
    """Open MPI 4.1 libnbc's choice for MPI_Iallreduce of a commutative sum (what dist::MpiAllReduce calls):
    binomial reduce and broadcast under 4 ranks or 64 KiB, else the reduce-scatter and all-gather."""
    return "binomial" if p < 4 or n < 65536 else "rabenseifner"


def mpi_terms(p, h, n, link, nonblocking=False):
    if p <= 1:
        return Terms(0.0, 0.0, 0.0)
    algorithm = nbc_algorithm(p, n) if nonblocking else mpi_algorithm(p, n)
    if algorithm == "binomial":
        # A binomial tree reduces to rank 0 in ceil(log2 p) rounds, then broadcasts from it in as many: the root
        # receives, then sends, a whole vector each round; every other rank sends and receives one.
        rounds = 2 * math.ceil(math.log2(p))
        net = (link.alpha + n * link.beta) if h > 1 else 0.0
        return Terms(rounds * net, rounds, 2 * 2 * (p - 1) * n / p, rounds, rounds * n if h > 1 else 0.0)
    if algorithm in ("ring", "segmented_ring"):
        return ring_terms(p, h, n, link)
    p2 = 1 << int(math.floor(math.log2(p)))
    extra = 2 if p2 != p else 0  # the ranks beyond the power of two hand their vector in first and get it back
    net = link.alpha if h > 1 else 0.0
    per_byte = link.beta if h > 1 else 0.0
    # The CPU's share is the bytes every rank sends and receives, averaged over the ranks (ranks that share cores
    # share this work; the extra ranks sit out the middle): r = p - p' pairs first fold into p' ranks.
    r = p - p2
    if algorithm == "recursive_doubling":
        steps = int(math.log2(p2)) + extra
        sent = r * 2 * n + p2 * int(math.log2(p2)) * n
        return Terms(steps * (net + n * per_byte), steps, 2 * sent / p, steps, steps * n if h > 1 else 0.0)
    steps = 2 * int(math.log2(p2)) + extra  # Rabenseifner: halving reduce-scatter, doubling all-gather
    volume = 2 * (p2 - 1) / p2 * n + extra * n
    sent = r * 2.5 * n + p2 * 2 * (p2 - 1) / p2 * n  # a pair: halves both ways, a half folded in, the whole back
    return Terms(steps * net + volume * per_byte, steps, 2 * sent / p, steps, volume if h > 1 else 0.0)


def hierarchical_terms(h, k, n, link):
    """Within a host: a reduce and a broadcast of n through shared memory; across: k rings of n / k over h hosts."""
    inter = Terms(0.0, 0.0, 0.0)
    if h > 1:
        inter = Terms(2 * (h - 1) * (link.alpha + n / h * link.beta), 2 * (h - 1), 4 * (h - 1) / h * n / k,
                      2 * (h - 1), 2 * (h - 1) / h * n)
    # Within a host the shared window copies each byte once where TCP copies it in and out and runs its stack:
    # a quarter of a TCP byte's cost (our reading, not fitted: one session of 2 x 2 ranks cannot separate them).
    intra = SHM_BYTE_WEIGHT * 2 * n * (k - 1) / k if k > 1 else 0.0
    return Terms(inter.wire, inter.messages + (2 if k > 1 else 0), inter.cpu_bytes + intra, max(inter.steps, 1),
                 inter.link_bytes)


def ps_terms(placement, n, link, servers):
    """Push then pull; each phase as long as the busiest host NIC (egress or ingress). Returns the worker's
    round trip in sync mode: every worker's push must arrive before any pull."""
    roles = placement.host_roles()
    workers = sum(w for w, _ in roles)
    servers = servers or max(1, sum(s for _, s in roles))
    shard = n / servers
    busiest = 0.0
    for w, s in roles:
        # push: this host's workers send the shards of the other hosts' servers; its servers receive from the
        # other hosts' workers. A pull is the same traffic reversed: the same busiest NIC.
        egress = w * shard * (servers - s)
        ingress = s * shard * (workers - w)
        busiest = max(busiest, egress, ingress)
    remote = any((w and servers - s) or (s and workers - w) for w, s in roles) and len(roles) > 1
    wire = 2 * (busiest * link.beta + (link.alpha if remote else 0.0))
    # Every worker sends n and receives n; averaged over all ranks (workers and servers share the cores).
    cpu = 2 * 2 * workers * n / (workers + sum(s for _, s in roles))
    # A worker posts every server's pull, then sends every push, without waiting between them: the critical path
    # holds one push and one pull, however many servers.
    return Terms(wire, 2, cpu, 2, 2 * busiest if remote else 0.0)


def comm_terms(schedule, placement, n, link):
    """The schedule's terms, less what a shaper's burst lets through at once (once a call: the bucket refills
    while the ranks compute or wait at the barrier between calls)."""
    t = schedule_terms(schedule, placement, n, link)
    if link.burst and t.link_bytes:
        t = dataclasses.replace(t, wire=max(0.0, t.wire - min(t.link_bytes, link.burst) * link.beta))
    return t


def schedule_terms(schedule, placement, n, link):
    p, h = placement.workers(), placement.hosts
    k = max(1, p // h) if h else 1
    if schedule.kind == "local" or p <= 1 and schedule.kind != "parameter_server":
        return Terms(0.0, 0.0, 0.0)
    if schedule.compression not in (None, "none") and schedule.kind != "parameter_server":
        c = schedule.wire_bytes if schedule.wire_bytes is not None else n * compression_ratio(schedule.compression)
        per = (link.alpha + c * link.beta) if h > 1 else 0.0
        return Terms((p - 1) * per, p - 1, 2 * (p - 1) * c + n, p - 1,  # all-gather of the payloads, then a sum
                     (p - 1) * c if h > 1 else 0.0)
    if schedule.kind in ("ring", "mpi_allreduce", "hierarchical"):
        # Each bucket is an all-reduce of its own: its latency terms count once a bucket.
        buckets = max(1, math.ceil(n / schedule.bucket_bytes)) if schedule.bucket_bytes else 1
        m = n / buckets
        t = {"ring": lambda: ring_terms(p, h, m, link),
             "mpi_allreduce": lambda: mpi_terms(p, h, m, link, schedule.nonblocking),
             "hierarchical": lambda: hierarchical_terms(h, k, m, link)}[schedule.kind]()
        return Terms(t.wire * buckets, t.messages * buckets, t.cpu_bytes * buckets, t.steps,
                     t.link_bytes * buckets)
    if schedule.kind == "parameter_server":
        return ps_terms(placement, n, link, schedule.servers)
    raise ValueError(f"model: unknown schedule kind '{schedule.kind}' (one of {', '.join(KINDS + ['local'])})")


def compression_ratio(name):
    """Wire bytes per gradient byte when a record does not say: fp16/bf16 halve, 1-bit sends a bit a float."""
    ratios = {"fp16": 0.5, "bf16": 0.5, "one_bit": 1 / 32, "onebit": 1 / 32}
    if name not in ratios:
        raise ValueError(f"model: no byte count for compression '{name}': give Schedule.wire_bytes")
    return ratios[name]


def comm_seconds(schedule, placement, n, link, calibration):
    """(total, wire part, cpu part) seconds of one step's communication: the link and the CPU (copies, sums, the
    TCP stack) work as a pipeline, so the slower sets the pace; every message adds its overhead o."""
    t = comm_terms(schedule, placement, n, link)
    constants = calibration.of(schedule.kind)
    if schedule.kind == "mpi_allreduce" and schedule.nonblocking:
        # libnbc is another implementation than coll/tuned, with no call-level measurement here (bench/comm times
        # the blocking MPI_Allreduce): its schedule uncalibrated (e = 1), the machine's and MPI's message costs.
        constants = (1.0, constants[1], constants[2])
    return combine(t, constants, placement.oversubscription(calibration.contention))


def combine(t, constants, oversubscription):
    e, o, g = constants
    wire = e * t.wire
    cpu = g * t.cpu_bytes * stretch(oversubscription, g * t.cpu_bytes)
    return max(wire, cpu) + o * t.messages, wire, cpu


SCHEDULER_TICK = 0.004  # seconds: Debian's kernels tick at 250 Hz


def stretch(oversubscription, seconds):
    """How much longer `seconds` of CPU work take with `oversubscription` threads a core: the full factor for work
    much longer than a scheduler tick, little for work much shorter (it usually runs within one time slice)."""
    return 1 + (oversubscription - 1) * seconds / (seconds + SCHEDULER_TICK)


# ---------------------------------------------------------------------------------------------------------------
# One step.

def predict_step(compute, schedule, placement, n, link, calibration):
    """Seconds per step and its breakdown: compute, comm_exposed, comm_hidden, and comm (all of it)."""
    over = placement.oversubscription(calibration.contention)
    c = compute.scaled(placement.threads_per_rank, over, calibration.contention)
    total, wire, cpu = comm_seconds(schedule, placement, n, link, calibration)
    if schedule.kind == "parameter_server":
        # The optimizer runs on the servers, each on its shard, between a worker's push and its pull.
        total += c.update / max(1, placement.servers() or schedule.servers)
        c = dataclasses.replace(c, update=0.0)
    exposed, hidden = total, 0.0
    if schedule.bucket_bytes and schedule.kind in ("ring", "mpi_allreduce", "hierarchical") and n > 0:
        buckets = max(1, math.ceil(n / schedule.bucket_bytes))
        overlappable = c.backward * (buckets - 1) / buckets  # the last bucket is ready only when backward ends
        if cpu >= wire and over >= 1.0:
            exposed = total  # the CPU sets the pace and every core computes backward: nothing can hide
        else:
            exposed = max(total / buckets, total - overlappable)
        hidden = total - exposed
    step = c.total() + exposed
    if schedule.kind == "parameter_server" and schedule.sync != "sync":
        # Asynchronous: a server steps once for every worker's gradient (sync: once for all), so it is busy
        # W x update / S a round; a worker cannot step faster than its servers turn round.
        servers = max(1, placement.servers() or schedule.servers)
        step = max(step, placement.workers() * compute.scaled(placement.threads_per_rank, over,
                                                              calibration.contention).update / servers)
        exposed = step - c.total()
    return {"step_seconds": step, "compute": c.total(), "load": c.load, "forward": c.forward,
            "backward": c.backward, "update": c.update, "comm_exposed": exposed, "comm_hidden": hidden,
            "comm_total": total, "comm_wire": wire, "comm_cpu": cpu}


# ---------------------------------------------------------------------------------------------------------------
# Fitting.

def fit_alpha_beta(points):
    """alpha and beta (s/byte) of t(n) = alpha + n beta by least squares over (bytes, seconds) points; alpha is
    clamped at 0 (a shaper's burst can make small messages beat the rate)."""
    if len(points) < 2:
        raise ValueError("model: fitting alpha and beta needs at least two sizes")
    xs, ys = [float(x) for x, _ in points], [float(y) for _, y in points]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    if sxx == 0:
        raise ValueError("model: fitting alpha and beta needs two different sizes")
    beta = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx
    alpha = my - beta * mx
    if alpha < 0:
        alpha, beta = 0.0, sum(x * y for x, y in zip(xs, ys)) / sum(x * x for x in xs)
    return alpha, beta


def fit_constants(terms, measured, oversubscription, g):
    """(e, o, g) with g given, minimising the squared log error of combine() over the points: a coarse grid of (e, o)
    first (the max() makes the loss non-convex: a local search alone can settle on the wrong regime), then a
    coordinate search in log space from its best point."""
    def loss(e, o):
        return sum(math.log(max(combine(t, (e, o, g), c)[0], 1e-12) / m) ** 2
                   for t, m, c in zip(terms, measured, oversubscription))

    best = min(((e, o) for e in [0.5 * 1.2 ** i for i in range(13)]        # 0.5 .. 4.5
                for o in [0.0] + [1e-6 * 2 ** i for i in range(9)]),       # 0, 1 us .. 0.26 ms
               key=lambda x: loss(*x))
    x, value, step = list(best), loss(*best), 1.2
    while step > 1.002:
        improved = False
        for i, f in ((0, step), (0, 1 / step), (1, step), (1, 1 / step)):
            y = list(x)
            y[i] = max(y[i], 1e-9) * f if i == 1 else y[i] * f
            v = loss(*y)
            if v < value - 1e-12:
                x, value, improved = y, v, True
                break
        if not improved:
            step = math.sqrt(step)
    return (x[0], x[1], g), value


@dataclasses.dataclass
class Observation:
    """One measured communication time (or step) with everything the model needs to predict it."""
    source: str
    config: str          # the configuration it belongs to (held out together)
    kind: str
    placement: Placement
    link: Link
    nbytes: float
    measured: float      # seconds
    schedule: Schedule = None
    compute: Compute = None  # set for whole steps; None: a communication time alone
    label: str = ""
    own_compute: bool = False  # the step's compute phases are its own record's (only communication predicted)
    spread: tuple = None       # (min, max) over repeats when several measured it


def predict(obs, calibration):
    schedule = obs.schedule or Schedule(obs.kind)
    if obs.compute is None:
        return comm_seconds(schedule, obs.placement, obs.nbytes, obs.link, calibration)[0]
    return predict_step(obs.compute, schedule, obs.placement, obs.nbytes, obs.link, calibration)["step_seconds"]


def fit(observations, base=None):
    """Fit the constants on the communication observations (steps never calibrate: their compute is measured, so
    they test the calibration). g, the CPU's cost of a byte through copies, sums and the TCP stack, belongs to
    the machine and is shared by every implementation (so an implementation measured only where the link sets
    the pace still gets one); e and o are each implementation's. A grid over g and the contention weight, e and o
    fitted for each."""
    data = {}
    for o in observations:
        if o.compute is None and o.measured > 0 and o.kind in KINDS:
            t = comm_terms(o.schedule or Schedule(o.kind), o.placement, o.nbytes, o.link)
            data.setdefault(o.kind, []).append((t, o.measured, o.placement))
    def with_g(contention, g):
        calibration = Calibration(dict((base or Calibration()).constants), contention)
        loss = 0.0
        for kind, points in data.items():
            if len(points) < 3:
                continue
            calibration.constants[kind], value = fit_constants(
                [t for t, _, _ in points], [m for _, m, _ in points],
                [pl.oversubscription(contention) for _, _, pl in points], g)
            loss += value
        return loss, g, calibration

    with_background = any(o.placement.background for o in observations)
    best = min((with_g(c, g) for c in (CONTENTION_GRID if with_background else [1.0])
                for g in [0.0] + [1e-11 * 1.6 ** i for i in range(11)]),  # 0, 10 ps .. 1.1 ns a byte
               key=lambda x: x[0], default=None)
    if best is None:
        return Calibration()
    step = 1.25
    while step > 1.005 and best[1] > 0:  # refine g between the grid's points
        trial = min((with_g(best[2].contention, best[1] * f) for f in (step, 1 / step)), key=lambda x: x[0])
        if trial[0] < best[0] - 1e-12:
            best = trial
        else:
            step = math.sqrt(step)
    return best[2]


# The weight of the other processes' runnable threads: they compete for the cores less than their count says
# (Open MPI's idle ranks yield, a compiler waits on its disk): fitted from these.
CONTENTION_GRID = [0.0, 0.5, 1.0]


# ---------------------------------------------------------------------------------------------------------------
# Reading measurements: bench/cluster.py's results.json and run_matrix.py's records (schema 3 fields).

def read_cluster_results(path, machine_cores):
    """bench/cluster.py results (comm table: ring, MPI, PS push/pull at one rank a host; hierarchical table:
    flat ring, hierarchical, MPI at K ranks a host) as Observations. Emulated hosts share the machine's cores."""
    with open(path) as f:
        rows = json.load(f)
    out = obs = []
    run = os.path.basename(os.path.dirname(path)) + "/" + os.path.basename(path)
    for r in rows:
        if r.get("strategy") and "forward" in r:
            obs += [o for o in [dist_step(r, run, machine_cores)] if o]
            continue
        if "bytes" not in r or "link" not in r:
            continue
        h, k = r["hosts"], r.get("ranks_per_host", 1)
        link = emulated_link(r["link"])
        cores = machine_cores / h
        place = Placement(h, k, 0, cores, 1)
        measured = [("ring", r.get("ring_seconds")), ("mpi_allreduce", r.get("mpi_seconds")),
                    ("hierarchical", r.get("hierarchical_seconds"))]
        for kind, t in measured:
            if t:
                out.append(Observation(run, f"{kind} {h}x{k} {r['link']}", kind, place, link, r["bytes"], t,
                                       label=f"{kind} {h}x{k} {r['link']} {r['bytes']} B"))
        ps = r.get("ps_sync_push_pull_seconds")
        if ps and k == 1:
            roles = [(1, 0)] * (h - 1) + [(0, 1)]  # bench/comm: the last rank serves, the others push and pull
            place_ps = Placement(h, 1, 0, cores, 1, roles)
            out.append(Observation(run, f"parameter_server {h}x1 {r['link']}", "parameter_server", place_ps, link,
                                   r["bytes"], ps, Schedule("parameter_server", "sync", 1),
                                   label=f"ps {h}x1 {r['link']} {r['bytes']} B"))
    return out


RESNET18_GRADIENT_BYTES = 4 * 11_181_642  # bench/dist's net: ResNet-18, 10 classes (bench/cluster.py's count)
DIST_SCHEDULES = {"ring": Schedule("ring", bucket_bytes=DEFAULT_BUCKET_BYTES),  # bench/dist: 1 MiB buckets,
                  "mpi": Schedule("mpi_allreduce", bucket_bytes=DEFAULT_BUCKET_BYTES,  # overlapped
                                  nonblocking=True),
                  "ps-sync": Schedule("parameter_server", "sync", 1),
                  "ps-async": Schedule("parameter_server", "async", 1),
                  "ps-stale2": Schedule("parameter_server", "bounded", 1)}


def dist_step(r, run, machine_cores):
    """A row of bench/cluster.py's dist table (bench/dist: ResNet-18, batch 42, 1 thread, one rank a host; the
    parameter server's last rank serves) as a step Observation. Its compute is the row's own (only the
    communication is predicted); the measured step is the workers' mean phases' sum."""
    schedule = DIST_SCHEDULES.get(r["strategy"])
    if not schedule or not r.get("forward"):
        return None
    if r.get("compressor") not in (None, "", "none"):
        schedule = dataclasses.replace(schedule, compression=r["compressor"], wire_bytes=r.get("bytes_per_step"))
    h = r["hosts"]
    roles = [(1, 0)] * (h - 1) + [(0, 1)] if schedule.kind == "parameter_server" else None
    place = Placement(h, 1, 0, machine_cores / h, 1, roles)
    compute = Compute(r.get("load", 0.0), r["forward"], r["backward"], r.get("update", 0.0), 1)
    compute.measured_on = place
    step = sum(r.get(k, 0.0) for k in ("load", "forward", "backward", "comm_exposed", "update"))
    label = f"step {r['strategy']}{'+' + r['compressor'] if schedule.compression != 'none' else ''} resnet18 " \
            f"{h}h {r['link']}"
    return Observation(run, label, schedule.kind, place, emulated_link(r["link"]), RESNET18_GRADIENT_BYTES, step,
                       schedule, compute, label=label + " (own compute)", own_compute=True)


SCHEDULE_OF_STRATEGY = {"ring_allreduce": "ring", "mpi_allreduce": "mpi_allreduce",
                        "parameter_server": "parameter_server", "hierarchical": "hierarchical", "local": "local"}


def record_step_seconds(r, statistic="median"):
    """Seconds per step of a record: schema 3's median (or min over its repeats), else an epoch's time over its
    steps."""
    s = r.get("step_seconds")
    if isinstance(s, dict) and s.get(statistic):
        return s[statistic]
    if isinstance(s, dict) and s.get("median"):
        return s["median"]
    if isinstance(s, (int, float)):
        return s
    if r.get("time_per_epoch_seconds") and r.get("steps_per_epoch"):
        return r["time_per_epoch_seconds"] / r["steps_per_epoch"]
    return None


def record_phases(r):
    """Phases per step: schema 3's phases_seconds_per_step, else the epoch's over its steps."""
    if r.get("phases_seconds_per_step"):
        return r["phases_seconds_per_step"]
    if r.get("phases_seconds_per_epoch") and r.get("steps_per_epoch"):
        return {k: v / r["steps_per_epoch"] for k, v in r["phases_seconds_per_epoch"].items()}
    return None


def gradient_bytes(r):
    """The gradient's size in bytes: 4 x parameters (schema 3), else from gradient_bytes_per_step, which is what
    rank 0 sent: 2 (p - 1) / p of the gradient for the all-reduce strategies."""
    if r.get("parameters"):
        return 4.0 * r["parameters"]
    sent, p = r.get("gradient_bytes_per_step"), r.get("workers") or r.get("ranks") or 1
    if not sent:
        return None
    kind = SCHEDULE_OF_STRATEGY.get(r.get("strategy", ""), "")
    if kind in ("ring", "mpi_allreduce") and p > 1 and "one_bit" not in (r.get("variant") or "") \
            and r.get("system") != "cntk":
        return sent * p / (2 * (p - 1))
    return sent


def record_schedule(r):
    s = r.get("schedule") or {}
    kind = s.get("kind") or SCHEDULE_OF_STRATEGY.get(r.get("strategy", ""), None)
    if not kind:
        return None
    return Schedule(kind, s.get("sync") or r.get("mode") or "sync", s.get("servers") or r.get("servers") or 1,
                    s.get("bucket_bytes"), s.get("compression") or "none", s.get("bytes_on_wire_per_step"),
                    nonblocking=kind == "mpi_allreduce")  # the strategy's MPI_Iallreduce


def record_placement(r):
    p = r.get("placement")
    if not p:
        return None
    return Placement(p["hosts"], p.get("workers_per_host", 1), p.get("servers_per_host", 0),
                     p.get("cores_per_host", 1), p.get("threads_per_rank") or r.get("threads_per_rank") or 1,
                     background=p.get("background_threads_per_host") or 0.0)


def record_link(r):
    l = r.get("link")
    if not l:
        return None
    if l.get("name") == "none":
        return Link("none", 0.0, 0.0)
    if l.get("beta_seconds_per_byte"):
        return Link(l["name"], l.get("alpha_seconds") or 0.0, l["beta_seconds_per_byte"], l.get("burst_bytes") or 0.0)
    if l.get("rate_bits_per_second"):
        return Link(l["name"], l.get("alpha_seconds") or 0.0, 8.0 / l["rate_bits_per_second"])
    return Link.named(l["name"])


def compute_from_phases(phases, threads):
    return Compute(phases.get("load", 0.0), phases.get("forward", 0.0), phases.get("backward", 0.0),
                   phases.get("update", 0.0), threads)


def read_records(runs_dir, statistic="median"):
    """run_matrix.py records with placement, link and schedule (schema 3) as step Observations. The compute
    profile: a one-worker record of the same net and system in the same folder (placement.hosts == 1 and one
    worker) when there is one, else the record's own compute phases (then only communication is predicted)."""
    records = []
    for path in sorted(glob.glob(os.path.join(runs_dir, "*.json"))):
        try:
            with open(path) as f:
                r = json.load(f)
        except (OSError, ValueError) as e:
            print(f"model: skipping {path}: {e}", file=sys.stderr)
            continue
        if isinstance(r, dict):
            r["_path"] = path
            records.append(r)
    singles = {}
    for r in records:
        p = r.get("placement") or {}
        if p.get("hosts") == 1 and (r.get("workers") or 1) == 1:
            singles[(r.get("net"), r.get("dataset"), r.get("system"))] = r
    out = []
    for r in records:
        place, link, schedule = record_placement(r), record_link(r), record_schedule(r)
        if link and place and (r.get("placement") or {}).get("emulated") and link.name != "none" and not link.burst:
            link.burst = EMULATED_BURST  # scripts/cluster's shaper
        step, phases = record_step_seconds(r, statistic), record_phases(r)
        spread = r.get("step_seconds") if isinstance(r.get("step_seconds"), dict) else {}
        n = gradient_bytes(r)
        if not (n and place and link and schedule and step and phases) or (place.hosts == 1 and place.workers() == 1):
            continue
        single = singles.get((r.get("net"), r.get("dataset"), r.get("system")))
        source_phases = record_phases(single) if single else phases
        measuring = record_placement(single) if single else place
        compute = compute_from_phases(source_phases, measuring.threads_per_rank if measuring else 1)
        compute.measured_on = measuring
        out.append(Observation(os.path.basename(r["_path"]), f"step {os.path.basename(r['_path'])}", schedule.kind,
                               place, link, n, step, schedule, compute,
                               label=f"step {r.get('system')} {r.get('net')} {place.hosts}h {link.name}"
                                     + ("" if single else " (own compute)"), own_compute=not single,
                               spread=(spread["min"], spread["max"]) if spread.get("min") else None))
    return out


def merge_repeats(observations, statistic="min"):
    """Repeats of one measurement (same label and configuration) become one point, with their spread: the least
    disturbed repeat (min: the model leaves out other processes' contention, which only adds time) or the median."""
    groups = {}
    for o in observations:
        groups.setdefault((o.config, o.label), []).append(o)
    pick = min if statistic == "min" else statistics.median
    out = []
    for group in groups.values():
        values = [o.measured for o in group]
        out.append(dataclasses.replace(group[0], measured=pick(values),
                                       spread=(min(values), max(values)) if len(values) > 1 else group[0].spread,
                                       source=",".join(sorted({o.source for o in group}))))
    return out


def emulated_link(name):
    """An emulated link as scripts/cluster shapes it: tc's rate counts Ethernet and TCP/IP headers (66 bytes a
    1448-byte segment at MTU 1500), so payload moves at rate x 1448 / 1514 (the quiet ping-pongs of
    bench/results/2026-11-29-zen5-issue33-hierarchical and of the first session here measured 92-97% of the rate);
    alpha 0 (no delay is set: a message's own cost is the calibrated o), and the shaper's burst. The session's own
    ping-pong is not used: on 2 busy cores it measures the load as much as the link, which the model takes from
    load.json instead."""
    if name == "none":
        return Link("none", 0.0, 0.0)
    return Link(name, 0.0, 1514 / (1448 * rate_bytes_per_second(name)), EMULATED_BURST)


def session_contention(results_path):
    """Other processes' runnable threads on the machine during a session, weighted by their nice values (load.json
    beside its results, by bench/results/2026-11-29-zen5-issue31-model/contention.py), or None where it was not
    recorded."""
    path = os.path.join(os.path.dirname(results_path), "load.json")
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return json.load(f).get("weighted_others_mean")


def read_dir(path, machine_cores, statistic="min"):
    """Every measurement a folder holds: bench/cluster.py's results*.json and run_matrix.py's runs/*.json. Each
    emulated link is as scripts/cluster shapes it (emulated_link), its contention the session's load.json."""
    obs = []
    files = sorted(glob.glob(os.path.join(path, "**", "results*.json"), recursive=True))
    for f in files:
        others = session_contention(f)
        for o in read_cluster_results(f, machine_cores):
            if others is not None:  # the others' threads, spread over the emulated hosts as the cores are
                o.placement.background = others / o.placement.hosts
            obs.append(o)
    for d in sorted({os.path.dirname(f) for f in glob.glob(os.path.join(path, "**", "*.json"), recursive=True)}):
        if not os.path.basename(d).startswith("results"):
            obs += read_records(d, statistic)
    return obs


# ---------------------------------------------------------------------------------------------------------------
# Validation.

def errors_of(pairs):
    errs = [abs(p - m) / m for p, m in pairs if m > 0]
    return (statistics.median(errs) if errs else None), (max(errs) if errs else None)


STABLE_SPREAD = 1.25  # a point whose repeats differ by more (max / min) was disturbed by other processes


def stable(o):
    return o.spread is None or o.spread[1] <= STABLE_SPREAD * o.spread[0]


def validate(observations):
    """In-sample (fitted on every stable point) and held-out (each configuration predicted by constants fitted
    without it) predictions. Only stable points (repeats within STABLE_SPREAD of each other, chosen before any
    fit) calibrate: one repeat preempted for a scheduler tick must not bend the constants. A step's prediction
    is held out by construction (steps never calibrate)."""
    calibrating = [o for o in observations if stable(o)]
    full = fit(calibrating)
    rows = []
    configs = sorted({o.config for o in observations})
    held = {c: fit([o for o in calibrating if o.config != c]) for c in configs}
    for o in observations:
        rows.append({"label": o.label, "source": o.source, "config": o.config, "kind": o.kind,
                     "hosts": o.placement.hosts, "workers": o.placement.workers(), "link": o.link.name,
                     "bytes": o.nbytes, "step": o.compute is not None, "measured_seconds": o.measured,
                     "measured_spread_seconds": o.spread, "own_compute": o.own_compute, "stable": stable(o),
                     "predicted_in_sample_seconds": predict(o, full),
                     "predicted_held_out_seconds": predict(o, held[o.config])})
    return full, rows


def percentile(rows, key, q):
    errs = sorted(abs(r[key] - r["measured_seconds"]) / r["measured_seconds"] for r in rows)
    return errs[min(len(errs) - 1, int(q * len(errs)))] if errs else None


def summary(rows, key):
    med, worst = errors_of([(r[key], r["measured_seconds"]) for r in rows])
    return med, worst


def pyplot():
    """matplotlib's pyplot on the Agg backend (imported only where a figure is drawn)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def save_figure(fig, out, name, dpi=130):
    """NAME.png and NAME.svg in OUT; the paths written."""
    paths = []
    for ext in ("png", "svg"):
        path = os.path.join(out, f"{name}.{ext}")
        fig.savefig(path, dpi=dpi)
        paths.append(path)
    pyplot().close(fig)
    return paths


def plot_validation(rows, out, title):
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7, 6.5))
    markers = {"ring": "o", "mpi_allreduce": "s", "hierarchical": "^", "parameter_server": "D", "local": "x"}
    colors = {"1gbit": "tab:blue", "10gbit": "tab:orange", "none": "tab:green"}
    values = [v for r in rows for v in (r["measured_seconds"], r["predicted_held_out_seconds"]) if v > 0]
    lo, hi = min(values) / 2, max(values) * 2
    xs = [lo, hi]
    ax.plot(xs, xs, "k-", lw=1, label="y = x")
    for f, style in [(0.10, "--"), (0.25, ":")]:
        ax.plot(xs, [x * (1 + f) for x in xs], "k" + style, lw=0.8, label=f"±{int(f * 100)}%")
        ax.plot(xs, [x * (1 - f) for x in xs], "k" + style, lw=0.8)
    seen = set()
    for r in rows:
        if r["measured_spread_seconds"]:  # the repeats' range: how far the machine's load moved the measurement
            lo_s, hi_s = r["measured_spread_seconds"]
            ax.plot([lo_s, hi_s], [r["predicted_held_out_seconds"]] * 2, "-", color="0.6", lw=0.6, zorder=0)
        key = (r["kind"], r["link"], r["step"])
        label = f"{r['kind']}{' step' if r['step'] else ''}, {r['link']}"
        ax.scatter(r["measured_seconds"], r["predicted_held_out_seconds"], marker=markers.get(r["kind"], "o"),
                   facecolors="none" if not r["step"] else colors.get(r["link"], "tab:gray"),
                   edgecolors=colors.get(r["link"], "tab:gray"), s=36, label=None if key in seen else label)
        seen.add(key)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    ax.set_xlabel("measured seconds (grey: the repeats' range)")
    ax.set_ylabel("predicted seconds (held out)")
    med, worst = summary(rows, "predicted_held_out_seconds")
    ax.set_title(f"{title}\nheld-out error: median {100 * med:.1f}%, worst {100 * worst:.1f}% ({len(rows)} points)",
                 fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    return save_figure(fig, out, "predicted_vs_measured", 130)


def run_validate(args):
    obs = []
    for d in args.validate:
        obs += read_dir(d, args.machine_cores, args.repeats)
    obs = merge_repeats(obs, args.repeats)
    if not obs:
        sys.exit(f"model: no measurement with placement and link in {', '.join(args.validate)} (bench/cluster.py's "
                 "results*.json or run_matrix.py records with schema 3's placement, link and schedule)")
    calibration, rows = validate(obs)
    os.makedirs(args.out, exist_ok=True)
    med_in, worst_in = summary(rows, "predicted_in_sample_seconds")
    med, worst = summary(rows, "predicted_held_out_seconds")
    quiet = [r for r in rows if r["stable"]]
    med_s, worst_s = summary(quiet, "predicted_held_out_seconds") if quiet else (None, None)
    result = {"calibration": calibration.to_json(), "points": len(rows),
              "held_out": {"median_relative_error": med, "worst_relative_error": worst,
                           "p90_relative_error": percentile(rows, "predicted_held_out_seconds", 0.9)},
              "held_out_stable": {"median_relative_error": med_s, "worst_relative_error": worst_s,
                                  "points": len(quiet), "spread_limit": STABLE_SPREAD},
              "in_sample": {"median_relative_error": med_in, "worst_relative_error": worst_in},
              "goal": {"median": 0.10, "worst": 0.25, "met": med <= 0.10 and worst <= 0.25},
              "repeats_reduced_by": args.repeats,
              "sources": args.validate, "rows": rows}
    by_kind = {}
    for kind in sorted({r["kind"] + (" step" if r["step"] else "") for r in rows}):
        sub = [r for r in rows if r["kind"] + (" step" if r["step"] else "") == kind]
        by_kind[kind] = dict(zip(["median", "worst"], summary(sub, "predicted_held_out_seconds")), points=len(sub))
    result["held_out_by_kind"] = by_kind
    by_regime = {}
    for r in rows:
        key = f"{r['link']}, {'steps' if r['step'] else ('>= 1 MiB' if r['bytes'] >= 1 << 20 else '< 1 MiB')}"
        by_regime.setdefault(key, []).append(r)
    result["held_out_by_regime"] = {k: dict(zip(["median", "worst"], summary(v, "predicted_held_out_seconds")),
                                            points=len(v)) for k, v in sorted(by_regime.items())}
    with open(os.path.join(args.out, "validation.json"), "w") as f:
        json.dump(result, f, indent=1)
    with open(os.path.join(args.out, "calibration.json"), "w") as f:
        json.dump(calibration.to_json(), f, indent=1)
    result["figures"] = plot_validation(rows, args.out, args.title)
    print(f"{len(rows)} points from {', '.join(args.validate)}")
    print(f"held out (leave one configuration out): median {100 * med:.1f}%, worst {100 * worst:.1f}% "
          f"(goal <= 10%, <= 25%: {'met' if result['goal']['met'] else 'NOT met'})")
    print(f"in sample: median {100 * med_in:.1f}%, worst {100 * worst_in:.1f}%")
    if quiet:
        print(f"held out, the {len(quiet)} stable points (repeats within {STABLE_SPREAD}x): median "
              f"{100 * med_s:.1f}%, worst {100 * worst_s:.1f}%")
    for kind, v in by_kind.items():
        print(f"  {kind}: {v['points']} points, median {100 * v['median']:.1f}%, worst {100 * v['worst']:.1f}%")
    for regime, v in result["held_out_by_regime"].items():
        print(f"  {regime}: {v['points']} points, median {100 * v['median']:.1f}%, worst {100 * v['worst']:.1f}%")
    for k, (e, o, g) in calibration.constants.items():
        print(f"  {k}: wire x {e:.3f}, {1e6 * o:.1f} us a message, {1e9 * g:.3f} ns a CPU byte")
    print(f"  the other processes' threads compete at {calibration.contention:.2f} each")
    worst_rows = sorted(rows, key=lambda r: -abs(r["predicted_held_out_seconds"] / r["measured_seconds"] - 1))[:5]
    print("largest held-out errors:")
    for r in worst_rows:
        print(f"  {r['label']}: measured {1e3 * r['measured_seconds']:.3f} ms, predicted "
              f"{1e3 * r['predicted_held_out_seconds']:.3f} ms "
              f"({100 * (r['predicted_held_out_seconds'] / r['measured_seconds'] - 1):+.0f}%)")
    print(f"wrote {os.path.join(args.out, 'validation.json')}, calibration.json, {', '.join(result['figures'])}")
    return result


# ---------------------------------------------------------------------------------------------------------------
# Using it: the paper's testbed (Fig. 3, Table V) and the usability paper's scaling (Figs. 6-7).

PROFILES = os.path.join(HERE, "results", "2026-11-25-zen4-cifar10", "runs")
# The systems of Fig. 3 and Table V as sinew's presets run them (include/sinew/presets/), with the preset whose
# record gives the compute profile (MXNet runs PyTorch's oneDNN operators; its own records ran 6 ranks on 2 cores).
PAPER_SYSTEMS = [
    ("tensorflow", "sync", Schedule("ring"), "tensorflow-sync-preset"),
    ("tensorflow", "async", Schedule("parameter_server", "async", 3), "tensorflow-sync-preset"),
    ("pytorch", "sync", Schedule("ring", bucket_bytes=25 << 20), "pytorch-sync-preset"),
    ("mxnet", "sync", Schedule("parameter_server", "sync", 3), "pytorch-sync-preset"),
    ("mxnet", "async", Schedule("parameter_server", "async", 3), "pytorch-sync-preset"),
]
PAPER_NETS = ["lenet5_cifar10", "alexnet_cifar10", "resnet18_cifar10", "resnet18_cifar100", "resnet50_cifar10",
              "resnet50_cifar100"]
TABLE5_NETS = ["lenet5_cifar10", "alexnet_cifar10", "resnet18_cifar10", "resnet50_cifar10"]  # its CIFAR-10 runs


def profile_from_record(path):
    """(Compute, gradient bytes) of a run_matrix.py record: its workers' phases per step, with the
    oversubscription it ran under (ranks x threads over the machine's cores) divided out by Compute.scaled."""
    with open(path) as f:
        r = json.load(f)
    phases = record_phases(r)
    threads = r.get("threads_per_rank") or 1
    place = record_placement(r)
    if place:
        over = place.oversubscription()
    else:  # schema 1: the ranks shared the machine's cores, unbound
        cores = r.get("cores") or 2
        over = max(1.0, (r.get("ranks") or 1) * threads / cores)
    c = compute_from_phases(phases, threads)
    c.oversubscription = over
    return c, gradient_bytes(r), r


def paper_placement(schedule, cores=4):
    """The paper's testbed: 3 hosts of `cores` cores, one worker a host (all `cores` threads), and for the
    parameter server one server a host beside it."""
    return Placement(3, 1, 1 if schedule.kind == "parameter_server" else 0, cores, cores)


def run_predict_paper(args):
    calibration, cal_path = load_calibration(args.calibration)
    profiles = args.profiles or PROFILES
    rows = []
    for net in PAPER_NETS:
        for system, mode, schedule, profile in PAPER_SYSTEMS:
            path = os.path.join(profiles, f"{profile}-{net}.json")
            if not os.path.exists(path):
                continue
            compute, n, _ = profile_from_record(path)
            for link_name in ("1gbit", "10gbit"):
                link = Link.named(link_name)
                place = paper_placement(schedule)
                b = predict_step(compute, schedule, place, n, link, calibration)
                paper_comm = b["step_seconds"] - b["load"] - b["forward"] - b["backward"]  # the paper's residual
                rows.append({"net": net, "system": system, "mode": mode, "link": link_name,
                             "schedule": schedule.kind, "load": b["load"], "forward": b["forward"],
                             "backward": b["backward"], "update": b["update"],
                             "gradient_bytes": n, "profile": os.path.basename(path),
                             "step_seconds": b["step_seconds"], "compute_seconds": b["compute"],
                             "comm_exposed_seconds": b["comm_exposed"], "comm_hidden_seconds": b["comm_hidden"],
                             "paper_comm_seconds_per_step": paper_comm,
                             "run_seconds": b["step_seconds"] * PAPER_STEPS,
                             "paper_comm_seconds_per_run": paper_comm * PAPER_STEPS})
    if not rows:
        sys.exit(f"model: no compute profiles in {profiles} (run_matrix.py records named like "
                 "pytorch-sync-preset-lenet5_cifar10.json; --profiles DIR)")
    # The paper's Table V is the mean over its four CIFAR-10 nets; the model's over those the profiles have.
    table5_nets = [n for n in TABLE5_NETS if any(r["net"] == n for r in rows)]
    table5 = []
    for (system, mode), paper in PAPER_TABLE5.items():
        line = {"system": system, "mode": mode, "paper_seconds": paper}
        for link_name in ("1gbit", "10gbit"):
            vals = [r["paper_comm_seconds_per_run"] for r in rows if r["system"] == system and r["mode"] == mode
                    and r["link"] == link_name and r["net"] in table5_nets]
            line[f"model_{link_name}_seconds"] = statistics.fmean(vals) if vals else None
        table5.append(line)
    for line in table5:
        line["implied_gbit_per_second"] = implied_rate(line, profiles, calibration, table5_nets)
    os.makedirs(args.out, exist_ok=True)
    note = paper_note(cal_path, profiles)
    errors = validation_errors(cal_path)
    predicted = {link: predicted_findings(rows, profiles, link) for link in ("1gbit", "10gbit")}
    with open(os.path.join(args.out, "paper_prediction.json"), "w") as f:
        json.dump({"note": note, "calibration": calibration.to_json(), "steps": PAPER_STEPS, "runs": rows,
                   "table5": table5, "findings": predicted, "errors": errors}, f, indent=1)
    lines = [f"# The paper's testbed predicted (3 hosts x 4 cores, {PAPER_STEPS} steps: 10 epochs of 396)", "",
             note, "", "## Table V: mean communication time over the CIFAR-10 runs, seconds", "",
             f"The paper's: the mean over {', '.join(TABLE5_NETS)}; the model's: over "
             f"{', '.join(table5_nets) or 'none'}" + (" (the profiles have no other)" if table5_nets != TABLE5_NETS
                                                        else "") + ".", "",
             "| system | mode | paper | model at 1 Gbit/s | model at 10 Gbit/s | link rate at which the model gives"
             " the paper's (Gbit/s) |", "|---|---|---:|---:|---:|---:|"]
    for t in table5:
        fmt = lambda v: f"{v:.1f}" if v is not None else "-"
        rate = t["implied_gbit_per_second"]
        lines.append(f"| {t['system']} | {t['mode']} | {t['paper_seconds']:.2f} | {fmt(t['model_1gbit_seconds'])} |"
                     f" {fmt(t['model_10gbit_seconds'])} | {f'{rate:.2f}' if rate else 'none in 0.1-100'} |")
    lines += ["", "## Fig. 3: predicted training time (10 epochs), seconds", "",
              "| net | system | mode | 1 Gbit/s | 10 Gbit/s | compute a step ms |"
              " comm exposed a step ms (1 / 10 Gbit/s) |",
              "|---|---|---|---:|---:|---:|---:|"]
    for net in PAPER_NETS:
        for system, mode, _, _ in PAPER_SYSTEMS:
            pair = {r["link"]: r for r in rows if r["net"] == net and r["system"] == system and r["mode"] == mode}
            if len(pair) == 2:
                a, b = pair["1gbit"], pair["10gbit"]
                lines.append(f"| {net} | {system} | {mode} | {a['run_seconds']:.0f} | {b['run_seconds']:.0f} |"
                             f" {1e3 * a['compute_seconds']:.1f} | {1e3 * a['comm_exposed_seconds']:.1f} /"
                             f" {1e3 * b['comm_exposed_seconds']:.1f} |")
    lines += ["", "## The findings the model can judge, at the paper's testbed", "",
              "Its predicted steps and communication go through run_matrix.py's own findings() (the noise floor its "
              f"minimum, {100 * run_matrix.MIN_FLOOR:.0f}%: a prediction has no repeats); operators, memory and "
              "loaders are not the model's, so those findings are left to the measurements.", "",
              "| # | finding | paper | model at 1 Gbit/s | verdict | model at 10 Gbit/s | verdict |",
              "|---|---|---|---|---|---|---|"]
    for a, b in zip(predicted["1gbit"], predicted["10gbit"]):
        lines.append(f"| {a['id']} | {a['claim']} | {a['paper']} | {a['sinew']} | {short_verdict(a['reproduced'])} |"
                     f" {b['sinew']} | {short_verdict(b['reproduced'])} |")
    measured = args.findings or os.path.join(os.path.dirname(os.path.abspath(profiles)), "findings.json")
    table = reproduction_table(measured, predicted) if os.path.exists(measured) else None
    if table:
        with open(os.path.join(args.out, "reproduction_table.md"), "w") as f:
            f.write(table)
    with open(os.path.join(args.out, "paper_prediction.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    figures = plot_paper(rows, args.out, errors)
    print("\n".join(lines))
    print(f"wrote {os.path.join(args.out, 'paper_prediction.md')}, paper_prediction.json, {', '.join(figures)}")


# The findings whose quantities the model predicts (steps and the paper's communication residual); the others
# compare operators, memory or loaders, which it takes from the profile unchanged.
MODEL_FINDINGS = ["F1", "F2", "F3", "F4", "F5", "F12", "R1", "R2", "R3", "R4", "V-F", "T5a", "T5b"]


def predicted_findings(rows, profiles, link):
    """run_matrix.py's findings on records made of the model's predictions for the paper's testbed at `link`: each
    a copy of its profile's record with the predicted step and phases (so a preset keeps its backend, loader and
    parameters), judged with the noise floor's minimum. Only MODEL_FINDINGS are returned."""
    records = []
    for r in rows:
        if r["link"] != link:
            continue
        with open(os.path.join(profiles, r["profile"])) as f:
            rec = json.load(f)
        step = r["step_seconds"]
        rec.update({"system": r["system"], "mode": r["mode"], "variant": "preset",
                    "strategy": f"{r['schedule']} ({r['mode']})", "workers": 3,
                    "step_seconds": {"median": step, "min": step, "max": step, "repeats": [step]},
                    "phases_seconds_per_step": {k: r[k] for k in ("load", "forward", "backward", "update")} |
                    {"comm_exposed": r["comm_exposed_seconds"], "comm_hidden": r["comm_hidden_seconds"]}})
        rec["peak_rss_bytes_per_rank"] = (rec.get("peak_rss_bytes_per_rank") or [0.0])[:1] * 3
        records.append(rec)
    found = run_matrix.findings(run_matrix.Matrix(records))
    return [f for f in found if f["id"] in MODEL_FINDINGS]


def short_verdict(text):
    """A verdict's words without its reason: "direction only", "reproduced (within 25%)", "untestable here"."""
    if text.startswith("first part:"):
        return "; ".join(short_verdict(p.split(":", 1)[1].strip()) for p in text.split("; second part"))
    if text.startswith("reproduced"):
        return "reproduced (within 25%)"
    return re.split(r" \(|:", text, maxsplit=1)[0]


def reproduction_table(measured_path, predicted):
    """The note's table: each finding of the measured run (findings.json) with the paper's figure, sinew's
    measurement and verdict, and the model's prediction for the paper's testbed at 1 and 10 Gbit/s."""
    with open(measured_path) as f:
        measured = json.load(f)
    by = {link: {f["id"]: f for f in found} for link, found in predicted.items()}
    lines = [f"Measured: {os.path.relpath(measured_path, ROOT)}. Model: the paper's testbed (3 hosts x 4 cores, one "
             "worker a host, a parameter server's servers one a host beside it), predicted from the measured run's "
             "own profiles; '-' where the model predicts nothing the finding compares (operators, memory, loaders).",
             "", "| # | finding | paper | sinew measured | verdict | model, testbed 1 Gbit/s | model, 10 Gbit/s |",
             "|---|---|---|---|---|---|---|"]
    for f in measured:
        cells = []
        for link in ("1gbit", "10gbit"):
            p = by.get(link, {}).get(f["id"])
            cells.append(f"{p['sinew']} ({short_verdict(p['reproduced'])})" if p else "-")
        lines.append(f"| {f['id']} | {f['claim']} | {f['paper']} | {f['sinew']} | {short_verdict(f['reproduced'])} |"
                     f" {cells[0]} | {cells[1]} |")
    return "\n".join(lines) + "\n"


def table5_model(system, mode, profiles, calibration, link, nets=TABLE5_NETS):
    """The model's Table V cell: the paper's communication residual over a 10-epoch run, mean of the CIFAR-10 nets."""
    schedule, profile = [(sc, pr) for s, m, sc, pr in PAPER_SYSTEMS if (s, m) == (system, mode)][0]
    vals = []
    for net in nets:
        path = os.path.join(profiles, f"{profile}-{net}.json")
        if not os.path.exists(path):
            return None
        compute, n, _ = profile_from_record(path)
        b = predict_step(compute, schedule, paper_placement(schedule), n, link, calibration)
        vals.append((b["step_seconds"] - b["load"] - b["forward"] - b["backward"]) * PAPER_STEPS)
    return statistics.fmean(vals)


def implied_rate(line, profiles, calibration, nets=TABLE5_NETS):
    """The link rate (Gbit/s, alpha 0) at which the model's Table V cell equals the paper's, by bisection on a log
    scale between 0.1 and 100 Gbit/s; None when none does (the cell's floor, compute-bound, is above it)."""
    f = lambda g: table5_model(line["system"], line["mode"], profiles, calibration, Link("x", 0.0, 8 / (g * 1e9)),
                               nets)
    lo, hi = 0.1, 100.0
    if f(lo) is None or not f(hi) <= line["paper_seconds"] <= f(lo):
        return None
    for _ in range(50):
        mid = math.sqrt(lo * hi)
        if f(mid) > line["paper_seconds"]:
            lo = mid
        else:
            hi = mid
    return math.sqrt(lo * hi)


def paper_note(cal_path, profiles):
    return (f"Compute: one worker's phases per step from {os.path.relpath(profiles, ROOT)} "
            f"({profiles_said(profiles)}), scaled to 4 threads by Amdahl's law with a serial fraction of 0.1 "
            "(assumed: 2 cores cannot fit it), at that CPU's speed, not the paper's 2.2 GHz Intel vCPUs'; the "
            "paper's Fig. 3 is an image in the text copy (/work/shared/papers), so only Table V's numbers stand "
            "beside the model's. Links: nominal 1 and 10 Gbit/s, alpha 0, with the calibrated constants "
            f"({os.path.relpath(cal_path, ROOT) if cal_path else 'none: bare alpha-beta'}). "
            "Communication is the paper's residual: step - load - forward - backward (update and waiting included). "
            "Left out: contention beyond oversubscription, stragglers, OS noise, gRPC's and RPC's own costs (every "
            "transport here is MPI over TCP), the servers' compute beyond their shard's update.")


def profiles_said(profiles):
    """Where the profiles were measured, from their records: the CPU, the stack, the placement and the run's
    length (a record of schema 1 says less: its ranks shared the machine's cores, unbound)."""
    paths = sorted(glob.glob(os.path.join(profiles, "*-preset-*.json")))
    if not paths:
        return "no records"
    with open(paths[0]) as f:
        r = json.load(f)
    stack = r.get("stack") or {}
    place = r.get("placement") or {}
    said = [f"sinew on {r.get('cpu_model', 'an unnamed CPU')}"]
    if stack:
        said.append(", ".join(f"{k} {v}" for k, v in stack.items() if k != "os"))
    if place:
        said.append(f"{place['hosts']} hosts x {place['cores_per_host']:g} core(s), {place['threads_per_rank']} "
                    f"thread(s) a rank, {place['binding']}")
    else:
        said.append(f"{r.get('ranks')} ranks x {r.get('threads_per_rank')} thread(s) sharing the machine's cores "
                    "unbound: the oversubscription divided out")
    steps = set()
    for p in paths:
        with open(p) as f:
            x = json.load(f)
        steps.add(x.get("timed_steps") or x["steps_per_epoch"])
    steps = sorted(steps)
    said.append(f"{'/'.join(str(x) for x in steps)} timed steps a run")
    return "; ".join(said)


def plot_paper(rows, out, errors=None):
    """Fig. 3 as the model predicts it, each bar with the validation's median error over training steps (else over
    every point) as its error bar."""
    plt = pyplot()
    err = (errors or {}).get("steps_median") or (errors or {}).get("median")
    which = "training steps'" if (errors or {}).get("steps_median") else "held-out"
    nets = [n for n in PAPER_NETS if any(r["net"] == n for r in rows)]
    systems = [(s, m) for s, m, _, _ in PAPER_SYSTEMS]
    fig, axes = plt.subplots(1, len(nets), figsize=(3.0 * len(nets), 4.2), sharey=False)
    for ax, net in zip(axes if len(nets) > 1 else [axes], nets):
        for i, (system, mode) in enumerate(systems):
            for j, (link, hatch) in enumerate([("1gbit", ""), ("10gbit", "//")]):
                r = [x for x in rows if x["net"] == net and x["system"] == system and x["mode"] == mode
                     and x["link"] == link]
                if r:
                    y = r[0]["run_seconds"]
                    # A prediction err too long or too short: the step is y / (1 + err) .. y (1 + err).
                    yerr = [[y - y / (1 + err)], [y * err]] if err else None
                    ax.bar(i + 0.4 * j, y, 0.4, color=f"C{i}", hatch=hatch, edgecolor="k", lw=0.5, yerr=yerr,
                           capsize=2, error_kw={"lw": 0.7},
                           label=f"{link}" if net == nets[0] and i == 0 else None)
        ax.set_xticks([i + 0.2 for i in range(len(systems))])
        ax.set_xticklabels([f"{s}\n{m}" for s, m in systems], rotation=60, fontsize=7)
        ax.set_title(net, fontsize=9)  # each net on its own linear axis from 0: bars on a log axis mislead
        ax.grid(True, axis="y", alpha=0.3)
    first = axes[0] if len(nets) > 1 else axes
    first.set_ylabel("predicted seconds, 10 epochs")
    first.legend(fontsize=7, title="link (hatched: 10 Gbit/s)", title_fontsize=7)
    fig.suptitle("Fig. 3 predicted for the paper's testbed (3 hosts x 4 cores, 1 worker a host)" +
                 (f";\nerror bars: the model's median error over the validation's {which} points, {100 * err:.0f}%"
                  if err else ""), fontsize=10)
    fig.tight_layout()
    return save_figure(fig, out, "paper_fig3_predicted", 120)


SCALING_CONFIGS = [("allreduce-sync", Schedule("ring", bucket_bytes=DEFAULT_BUCKET_BYTES), 0),
                   ("ps-sync", Schedule("parameter_server", "sync", 1), 1),
                   ("ps-async", Schedule("parameter_server", "async", 1), 1)]


def run_predict_scaling(args):
    """The usability paper's Figs. 6-7: ResNet-50 on CIFAR-10, batch 128 a worker, one worker a node (10 Gbit/s),
    images/s from 1 to 64 nodes; the parameter server with one server and one worker on each node as the paper
    ran TensorFlow. The error band: the validation's held-out median and worst relative errors."""
    calibration, cal_path = load_calibration(args.calibration)
    path = os.path.join(args.profiles or PROFILES, "pytorch-sync-preset-resnet50_cifar10.json")
    compute, n, record = profile_from_record(path)
    batch = 128
    scale = batch / (record.get("local_batch") or 42)  # compute grows with the batch; loading too
    compute = Compute(compute.load * scale, compute.forward * scale, compute.backward * scale, compute.update,
                      compute.threads, compute.serial_fraction, compute.oversubscription)
    errors = validation_errors(cal_path)
    nodes = [1, 2, 4, 8, 16, 32, 64]
    link = Link.named(args.link)
    results = {}
    for name, schedule, servers_per_host in SCALING_CONFIGS:
        points = []
        for h in nodes:
            sched = dataclasses.replace(schedule, servers=h if servers_per_host else schedule.servers)
            place = Placement(h, 1, servers_per_host, args.cores, args.cores)
            b = predict_step(compute, sched, place, n, link, calibration) if (h > 1 or servers_per_host) else \
                predict_step(compute, Schedule("local"), place, n, link, calibration)
            points.append({"nodes": h, "step_seconds": b["step_seconds"], "images_per_second": h * batch /
                           b["step_seconds"], "comm_exposed_seconds": b["comm_exposed"]})
        results[name] = points
    os.makedirs(args.out, exist_ok=True)
    note = (f"ResNet-50 (CIFAR-10, batch {batch} a worker) compute from {os.path.basename(path)} scaled by the batch "
            f"and to {args.cores} threads (Amdahl, serial fraction 0.1); {args.link} links; one worker a node, the "
            "parameter server with one server a node (S = nodes). The paper ran one K80 GPU a node: its absolute "
            "images/s differ; the curve's shape is what the model predicts. The parameter server on one node pays "
            "the emulated TCP's CPU cost for its local server (sinew would use shared memory). Left out: "
            "stragglers (so async lies on sync), incast at a server, congestion in a switch, OS noise. ")
    note += (f"Bands: the held-out median and 90th-percentile relative errors of the validation "
             f"({fmt_errors(errors)})." if errors else "No validation.json beside the calibration: no bands.")
    with open(os.path.join(args.out, "scaling_prediction.json"), "w") as f:
        json.dump({"note": note, "results": results, "errors": errors}, f, indent=1)
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7, 5))
    for i, (name, points) in enumerate(results.items()):
        xs = [p["nodes"] for p in points]
        ys = [p["images_per_second"] for p in points]
        same = name == "ps-async"  # the model has no stragglers: async lies on sync but for the servers' updates
        ax.plot(xs, ys, "s--" if same else "o-", color=f"C{i}", ms=4 if same else 6,
                label=name + (" (on ps-sync: no stragglers in the model)" if same else ""))
        if errors:
            for err, alpha in [(errors["p90"] or errors["worst"], 0.12), (errors["median"], 0.25)]:
                # The prediction's error either way: a step err times too long or too short.
                ax.fill_between(xs, [y / (1 + err) for y in ys], [y * (1 + err) for y in ys], color=f"C{i}",
                                alpha=alpha, lw=0)
        ax.plot(xs, [ys[0] * x for x in xs], ":", color=f"C{i}", lw=0.8)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("nodes (one worker each)")
    ax.set_ylabel("images/s (predicted)")
    ax.set_title("Usability paper Figs. 6-7 predicted: ResNet-50, CIFAR-10, batch 128 a worker\n"
                 "(dotted: linear; bands: the model's held-out median and 90th-percentile error)", fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    paths = save_figure(fig, args.out, "scaling_predicted")
    print(note)
    for name, points in results.items():
        print(f"  {name}: " + ", ".join(f"{p['nodes']}: {p['images_per_second']:.0f}" for p in points) + " images/s")
    print(f"wrote {os.path.join(args.out, 'scaling_prediction.json')}, {', '.join(paths)}")


def fmt_errors(errors):
    return ", ".join(f"{k} {100 * v:.0f}%" for k, v in errors.items() if v is not None)


def validation_errors(cal_path):
    """The held-out errors of the validation that wrote cal_path (validation.json beside it), or None."""
    if not cal_path:
        return None
    path = os.path.join(os.path.dirname(cal_path), "validation.json")
    if not os.path.exists(path):
        return None
    with open(path) as f:
        v = json.load(f)
    steps = sorted(abs(r["predicted_held_out_seconds"] / r["measured_seconds"] - 1) for r in v.get("rows", [])
                   if r.get("step") and r.get("measured_seconds"))
    return {"median": v["held_out"]["median_relative_error"], "p90": v["held_out"].get("p90_relative_error"),
            "worst": v["held_out"]["worst_relative_error"],
            # training steps alone (what Fig. 3's bars are): the calls of bench/cluster.py left out
            "steps_median": statistics.median(steps) if steps else None, "steps_worst": steps[-1] if steps else None}


def run_predict(args):
    """One configuration: RECORD's compute profile on --hosts hosts of --cores cores, one worker a host (the
    parameter server: one server a host beside it), at --link."""
    calibration, _ = load_calibration(args.calibration)
    compute, n, r = profile_from_record(args.predict)
    schedule = record_schedule(r) or Schedule("ring")
    if args.strategy:
        schedule = Schedule(args.strategy, args.mode, args.hosts if args.strategy == "parameter_server" else 1)
    elif schedule.kind == "parameter_server":
        schedule = dataclasses.replace(schedule, servers=args.hosts)
    place = Placement(args.hosts, 1, 1 if schedule.kind == "parameter_server" else 0, args.cores, args.cores)
    b = predict_step(compute, schedule, place, n, Link.named(args.link), calibration)
    print(f"{os.path.basename(args.predict)} on {args.hosts} hosts x {args.cores} cores at {args.link}, "
          f"{schedule.kind} ({schedule.sync}), {n / 1e6:.2f} MB of gradients:")
    for k in ("step_seconds", "compute", "load", "forward", "backward", "update", "comm_exposed", "comm_hidden",
              "comm_total"):
        print(f"  {k:13s} {1e3 * b[k]:10.3f} ms")
    return b


def load_calibration(path):
    if not path:
        path = os.path.join(os.path.dirname(HERE), "results", "2026-11-29-zen5-issue31-model", "worked",
                            "calibration.json")
    if not os.path.exists(path):
        print(f"model: no calibration at {path}: using e = 1, o = 0, g = 0 (the bare alpha-beta schedules)",
              file=sys.stderr)
        return Calibration(), None
    with open(path) as f:
        return Calibration.from_json(json.load(f)), path


def main(argv=None):
    a = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    a.add_argument("--validate", nargs="+", metavar="RUNS_DIR")
    a.add_argument("--predict", metavar="RECORD", help="predict one configuration from RECORD's compute profile")
    a.add_argument("--hosts", type=int, default=3, help="--predict: hosts, one worker each")
    a.add_argument("--strategy", choices=KINDS + ["local"], help="--predict: the schedule (default: the record's)")
    a.add_argument("--mode", default="sync", choices=["sync", "async", "bounded"], help="--predict: sync mode")
    a.add_argument("--predict-paper", action="store_true")
    a.add_argument("--predict-scaling", action="store_true")
    a.add_argument("--calibration", help="calibration.json written by --validate (default: the committed one)")
    a.add_argument("--profiles", help="folder of run_matrix.py records to take compute profiles from")
    a.add_argument("--findings", help="--predict-paper: the measured run's findings.json to set the model's "
                   "verdicts beside (default: the one beside --profiles)")
    a.add_argument("--machine-cores", type=float, default=float(os.cpu_count() or 1),
                   help="cores the emulated hosts of bench/cluster.py results shared (default: this machine's)")
    a.add_argument("--title", default="performance model: predicted vs measured")
    a.add_argument("--repeats", choices=["min", "median"], default="min",
                   help="--validate: how repeats of a measurement become one point (default: the least disturbed)")
    a.add_argument("--link", default="10gbit", help="--predict and --predict-scaling: the link (default 10gbit, "
                   "the usability paper's)")
    a.add_argument("--cores", type=int, default=4, help="--predict and --predict-scaling: cores a host")
    a.add_argument("--out", default=".")
    args = a.parse_args(argv)
    if not (args.validate or args.predict or args.predict_paper or args.predict_scaling):
        a.error("give --validate RUNS_DIR..., --predict RECORD, --predict-paper or --predict-scaling")
    if args.validate:
        run_validate(args)
    if args.predict:
        run_predict(args)
    if args.predict_paper:
        run_predict_paper(args)
    if args.predict_scaling:
        run_predict_scaling(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
