#!/usr/bin/env python3
"""bench/cluster.py: bench/comm and bench/dist across hosts (scripts/cluster), next to the alpha-beta bounds.

    sudo bench/cluster.py [--build build] [--links 1gbit,10gbit] [--hosts 2,3] [--delay 0us]
                          [--max 16777216] [--iterations 10] [--dist-link 1gbit] [--dist-hosts 3]
                          [--dist-steps 10] [--dist-configs ring,mpi,ps-sync,ps-async,ps-stale2]
                          [--dist-compress onebit,powersgd4] [--no-dist] [--out DIR]
    sudo bench/cluster.py --ranks-per-host 2 --hosts 2 --links 10gbit --no-dist      (hierarchical all-reduce)
    sudo bench/cluster.py --device     (4 hosts x 4 ranks at 10 Gbit/s up to 25 MiB: for a 16-core machine)

For every link rate and host count it makes a cluster (one rank per host, 1 thread each, every link shaped to
the rate both ways, --delay one way), runs bench/comm there and prints all-reduce latency and bus bandwidth of
sinew's ring and MPI_Allreduce next to the ring's alpha-beta bound on that link, and the synchronous parameter
server's push and pull of the same bytes next to its own,

    ring: 2 (p - 1) / p x bytes / bandwidth + 2 (p - 1) x latency,

which no all-reduce beats in its bandwidth term (so MPI_Allreduce is set against it too); the parameter server
(1 server, p - 1 workers): 2 (p - 1) x bytes / bandwidth + 2 x latency, its link carrying every worker's
gradients in and then, as the sum needs them all, the parameters out. Each bound is computed twice: with the
link's nominal rate and the shaped delay, and with the alpha (latency) and beta (bandwidth) that an MPI
ping-pong between two hosts measures on that link (bench/comm's "p2p" column: alpha from the smallest size,
beta from the two largest), which is what the alpha-beta model means by them: TCP/IP and Ethernet headers
(66 bytes per 1448 at MTU 1500, counted by tc's rate) and MPI's own latency are the link's, not the
algorithm's. Then bench/dist's ResNet-18 step breakdown for every strategy and mode at --dist-link on
--dist-hosts hosts, each with the bound of its communication per step: the ring's on the gradient bytes (its
latency term once per bucket), the parameter server's on the server's link. --dist-compress adds the ring with
each compressor (bench/dist --compress): its bound is the bytes a rank sends per step at the link's rate.
--links none skips bench/comm. Writes comm.md, dist.md and results.json to --out.

With --ranks-per-host K > 1 each host runs K ranks (scripts/cluster up --slots K; p = h K ranks on h hosts) and
the all-reduce table sets the flat ring over all p ranks, the ring's hierarchical transport (shared window within
each host, a ring across hosts per place; comm/ring_allreduce.hpp), MPI_Allreduce (Open MPI's default
components) and Open MPI 5's coll/han (only where ompi_info lists it, in Open MPI 5: 4.1's han, forced on, hung
the job here; the row says why it is missing) next to
their bounds on a host's link of rate B (bytes/s) and latency alpha, counting the network only:

    flat ring (ranks placed host by host):   2 (p - 1) / p x bytes / B + 2 (p - 1) x alpha
    hierarchical and coll/han:               2 (h - 1) / h x bytes / B + 2 (h - 1) x alpha

(the flat ring's every step puts one segment of bytes / p on each host's link, 2 (p - 1) steps; the
hierarchical's K rings across hosts each carry bytes / K in segments of bytes / (h K), so a host's link carries
2 (h - 1) / h x bytes in 2 (h - 1) steps; han's one leader per host all-reduces the whole bytes across hosts, the
same; the copies within a host through shared memory are left out). MPI_Allreduce is set against the flat ring's
bound, which its ring algorithm for large sums meets. The bounds are computed with the nominal rate and delay
and with alpha and beta fitted from a ping-pong between h0 and h1, which also predict both at --predict hosts x
ranks (default 8 x 16). This is the alpha-beta model alone: the performance model the reproduction issue asks
for does not exist yet, so nothing else predicts them.
Needs root (network namespaces). Figures are from one machine's cores: state its load with them.
"""
import argparse
import json
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CLUSTER = os.path.join(ROOT, "scripts", "cluster")
ENV = dict(os.environ, SINEW_CLUSTER=os.environ.get("SINEW_CLUSTER", "bench"))  # its own name: several may run
RESNET18_PARAMETERS = 11_181_642  # ResNet-18, 10 classes: bench/dist's net (gradient bytes = 4 x this)
BUCKET_BYTES = 1 << 20  # the strategies' default bucket


def rate_bytes_per_second(rate):
    m = re.fullmatch(r"([0-9.]+)([kmg]?)bit", rate.lower())
    if not m:
        sys.exit(f"cluster.py: cannot read the rate '{rate}': write it as tc does, e.g. 1gbit or 100mbit")
    return float(m.group(1)) * {"": 1, "k": 1e3, "m": 1e6, "g": 1e9}[m.group(2)] / 8


def seconds(time):
    m = re.fullmatch(r"([0-9.]+)(us|ms|s)", time)
    if not m:
        sys.exit(f"cluster.py: cannot read the delay '{time}': write it as 50us, 1ms or 0s")
    return float(m.group(1)) * {"us": 1e-6, "ms": 1e-3, "s": 1.0}[m.group(2)]


def cluster(*args, check=True, capture=False):
    return subprocess.run([CLUSTER, *args], env=ENV, check=check, text=True,
                          stdout=subprocess.PIPE if capture else None)


def ring_bound(p, nbytes, bw, alpha, messages=1):
    return 2 * (p - 1) / p * nbytes / bw + 2 * (p - 1) * alpha * messages


def ps_server_bound(p, nbytes, bw, alpha):
    """1 server, p - 1 workers: the server's link carries every worker's push in, then (the sum needs every
    push) every worker's pull out."""
    return 2 * (p - 1) * nbytes / bw + 2 * alpha


def hierarchical_bound(h, nbytes, bw, alpha):
    """k rings across h hosts, one per place on a host, each of nbytes / k: a host's link carries the same as one
    ring of all the bytes over the h hosts."""
    return 2 * (h - 1) / h * nbytes / bw + 2 * (h - 1) * alpha


def han_available():
    """Whether coll/han can be measured, and if not, why: ompi_info must list it, in Open MPI 5. Open MPI 4.1 lists
    a han too, but forced on (coll_han_priority 100) with 2 ranks a host over TCP its jobs here ended in
    "mca_btl_tcp_frag_send: writev error ... Bad address" and hung, with or without sinew's hierarchical transport."""
    try:
        out = subprocess.run(["ompi_info"], check=False, text=True, stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL).stdout
    except OSError:
        return False, "no ompi_info"
    version = re.search(r"Open MPI: ([0-9]+)\.([0-9.]+)", out)
    if not re.search(r"MCA coll: han\b", out):
        return False, "ompi_info lists no han component"
    if not version or int(version.group(1)) < 5:
        return False, (f"Open MPI {version.group(1) + '.' + version.group(2) if version else '?'}'s han fails here "
                       "(TCP writev errors, a hung job); the row needs Open MPI 5")
    return True, ""


def fit_alpha_beta(rows):
    """alpha and beta of the link from bench/comm's ping-pong rows: t(n) = alpha + n / beta."""
    pp = sorted((r["bytes"], r["pingpong_one_way_seconds"]) for r in rows if r.get("pingpong_one_way_seconds"))
    if len(pp) < 3:
        return None, None
    (n1, t1), (n2, t2) = pp[-2], pp[-1]
    beta = (n2 - n1) / (t2 - t1) if t2 > t1 else n2 / t2
    alpha = max(pp[0][1] - pp[0][0] / beta, 0.0)
    return alpha, beta


def comm_table(build, link, p, delay, args):
    cluster("up", str(p), "--bandwidth", link, *(["--delay", delay] if seconds(delay) > 0 else []))
    try:
        out = f"/tmp/sinew-cluster-comm-{os.getpid()}.json"
        cluster("run", "--", "mpirun", "-np", str(p), os.path.join(build, "bench", "comm"), "--no-gloo",
                "--min", str(args.min), "--max", str(args.max), "--iterations", str(args.iterations), "--json", out,
                capture=True)
        with open(out) as f:
            rows = json.load(f)
        os.remove(out)
    finally:
        cluster("down")
    bw, alpha = rate_bytes_per_second(link), seconds(delay)
    p2p_alpha, p2p_beta = fit_alpha_beta(rows)
    lines = [f"### all-reduce, {p} hosts, {link} links, {delay} one-way delay, 1 rank per host, 1 thread", "",
             f"Measured link (MPI ping-pong h0-h1): alpha {1e6 * p2p_alpha:.1f} us, beta {p2p_beta / 1e6:.1f} MB/s "
             f"({100 * p2p_beta / bw:.1f}% of the nominal {bw / 1e6:.1f} MB/s)." if p2p_beta else
             "No ping-pong figures (one host): bounds from the nominal rate only.", "",
             "| bytes | ring us | MPI us | ring bound us (rate / p2p) | ring % of bound (rate / p2p) |"
             " MPI % of bound (rate / p2p) | ring vs MPI | ring bus GB/s | PS push/pull us |"
             " PS bound us (rate / p2p) | PS % of bound (rate / p2p) |",
             "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    results = []
    for r in rows:
        n = r["bytes"]
        ring, mpi = r["ring_seconds"], r["mpi_allreduce_seconds"]
        bound = ring_bound(p, n, bw, alpha)
        ps = r.get("ps_sync_push_pull_seconds") or 0
        ps_bound = ps_server_bound(p, n, bw, alpha)
        if p2p_beta:
            bound2, ps_bound2 = ring_bound(p, n, p2p_beta, p2p_alpha), ps_server_bound(p, n, p2p_beta, p2p_alpha)
        else:
            bound2, ps_bound2 = bound, ps_bound
        pct = lambda b, t: f"{100 * b / t:.0f}%" if t else "-"
        lines.append(f"| {n} | {1e6 * ring:.0f} | {1e6 * mpi:.0f} | {1e6 * bound:.0f} / {1e6 * bound2:.0f} |"
                     f" {pct(bound, ring)} / {pct(bound2, ring)} | {pct(bound, mpi)} / {pct(bound2, mpi)} |"
                     f" {mpi / ring:.2f}x | {2 * (p - 1) / p * n / ring / 1e9:.3f} | {1e6 * ps:.0f} |"
                     f" {1e6 * ps_bound:.0f} / {1e6 * ps_bound2:.0f} | {pct(ps_bound, ps)} / {pct(ps_bound2, ps)} |")
        results.append(dict(link=link, hosts=p, delay=delay, bytes=n, ring_seconds=ring, mpi_seconds=mpi,
                            ring_bound_seconds=bound, ring_p2p_bound_seconds=bound2, ps_sync_push_pull_seconds=ps,
                            ps_bound_seconds=ps_bound, ps_p2p_bound_seconds=ps_bound2,
                            pingpong_one_way_seconds=r.get("pingpong_one_way_seconds"),
                            p2p_alpha_seconds=p2p_alpha, p2p_beta_bytes_per_second=p2p_beta))
    return "\n".join(lines), results


def hierarchical_table(build, link, h, k, delay, args):
    """The flat ring, the hierarchical transport, MPI_Allreduce and coll/han with h hosts of k ranks each."""
    p = h * k
    cluster("up", str(h), "--bandwidth", link, "--slots", str(k),
            *(["--delay", delay] if seconds(delay) > 0 else []))
    comm = [os.path.join(build, "bench", "comm"), "--no-gloo", "--no-ps", "--hierarchical", "--pingpong-peer",
            str(k), "--min", str(args.min), "--max", str(args.max), "--iterations", str(args.iterations)]
    han, han_missing = han_available()
    try:
        runs = {}
        # MPI_Allreduce as Open MPI picks it, but without han where han exists: its own run below.
        for label, mca in [("default", {"OMPI_MCA_coll": "^han"} if han else {}),
                           ("han", {"OMPI_MCA_coll_han_priority": "100"})][:2 if han else 1]:
            out = f"/tmp/sinew-cluster-hier-{os.getpid()}.json"
            command = [CLUSTER, "run", "--", "mpirun", "-np", str(p), *comm, "--json", out]
            try:
                subprocess.run(command, env=dict(ENV, **mca), check=True, text=True, stdout=subprocess.PIPE,
                               timeout=args.run_timeout)
            except subprocess.TimeoutExpired as e:
                sys.exit(f"cluster.py: {' '.join(command)} ran past {args.run_timeout} s; it printed:\n{e.stdout}")
            with open(out) as f:
                runs[label] = {r["bytes"]: r for r in json.load(f)}
            os.remove(out)
    finally:
        cluster("down")
    rows = list(runs["default"].values())
    bw, alpha = rate_bytes_per_second(link), seconds(delay)
    p2p_alpha, p2p_beta = fit_alpha_beta(rows)
    lines = [f"### all-reduce, {h} hosts x {k} ranks, {link} links, {delay} one-way delay, 1 thread a rank", "",
             f"Measured link (MPI ping-pong h0-h1): alpha {1e6 * p2p_alpha:.1f} us, beta {p2p_beta / 1e6:.1f} MB/s."
             if p2p_beta else "No ping-pong figures: bounds from the nominal rate only.",
             "" if han else f"coll/han: missing ({han_missing}).", "",
             "| bytes | flat ring us | hierarchical us | MPI us | han us | flat bound us (rate / p2p) |"
             " hierarchical bound us (rate / p2p) | hier % of bound (rate) | hier vs ring | hier vs MPI |"
             " hier vs han |", "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    results = []
    for r in rows:
        n = r["bytes"]
        ring, hier, mpi = r["ring_seconds"], r["hierarchical_seconds"], r["mpi_allreduce_seconds"]
        hanr = runs.get("han", {}).get(n, {}).get("mpi_allreduce_seconds")
        flat_b, hier_b = ring_bound(p, n, bw, alpha), hierarchical_bound(h, n, bw, alpha)
        if p2p_beta:
            flat_b2, hier_b2 = ring_bound(p, n, p2p_beta, p2p_alpha), hierarchical_bound(h, n, p2p_beta, p2p_alpha)
        else:
            flat_b2, hier_b2 = flat_b, hier_b
        lines.append(f"| {n} | {1e6 * ring:.0f} | {1e6 * hier:.0f} | {1e6 * mpi:.0f} | "
                     + (f"{1e6 * hanr:.0f}" if hanr else "missing") +
                     f" | {1e6 * flat_b:.0f} / {1e6 * flat_b2:.0f} | {1e6 * hier_b:.0f} / {1e6 * hier_b2:.0f} |"
                     f" {100 * hier_b / hier:.0f}% | {ring / hier:.2f}x | {mpi / hier:.2f}x | "
                     + (f"{hanr / hier:.2f}x |" if hanr else "- |"))
        results.append(dict(link=link, hosts=h, ranks_per_host=k, delay=delay, bytes=n, ring_seconds=ring,
                            hierarchical_seconds=hier, mpi_seconds=mpi, han_seconds=hanr,
                            ring_bound_seconds=flat_b, hierarchical_bound_seconds=hier_b,
                            ring_p2p_bound_seconds=flat_b2, hierarchical_p2p_bound_seconds=hier_b2,
                            p2p_alpha_seconds=p2p_alpha, p2p_beta_bytes_per_second=p2p_beta))
    if p2p_beta and rows:
        ph, pk = map(int, args.predict.split("x"))
        n = max(r["bytes"] for r in rows)
        flat, hier = ring_bound(ph * pk, n, p2p_beta, p2p_alpha), hierarchical_bound(ph, n, p2p_beta, p2p_alpha)
        lines += ["", f"Predicted by the alpha-beta bounds with the fitted alpha and beta at {ph} hosts x {pk} ranks,"
                  f" {n} bytes: flat ring {1e3 * flat:.1f} ms, hierarchical {1e3 * hier:.1f} ms ({flat / hier:.2f}x)."
                  " (No performance model beyond these bounds exists yet.)"]
        results.append(dict(prediction=f"{ph}x{pk}", bytes=n, ring_bound_seconds=flat,
                            hierarchical_bound_seconds=hier))
    return "\n".join(lines), results


def dist_table(build, link, p, delay, args):
    bw, alpha = rate_bytes_per_second(link), seconds(delay)
    grad = 4 * RESNET18_PARAMETERS
    buckets = -(-grad // BUCKET_BYTES)
    lines = [f"### ResNet-18 (3x32x32, batch 42 per worker), {p} hosts at {link}, {delay} one-way delay, "
             "1 rank per host, 1 thread", "",
             "| strategy | images/s | load ms | forward ms | backward ms | comm exposed ms | comm hidden ms |"
             " update ms | comm bound ms | MB sent per step |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    results = []
    cluster("up", str(p), "--bandwidth", link, *(["--delay", delay] if seconds(delay) > 0 else []))
    try:
        runs = [(c, "none") for c in args.dist_configs.split(",") if c]
        runs += [("ring", c) for c in args.dist_compress.split(",") if c and c != "none"]
        for config, compressor in runs:
            label = config if compressor == "none" else f"{config}+{compressor}"
            run = cluster("run", "--", "mpirun", "-np", str(p), os.path.join(build, "bench", "dist"), "--run",
                          config, "--compress", compressor, "--threads", "1", "--batch", "42", "--warmup", "3",
                          "--steps", str(args.dist_steps), check=False, capture=True)
            r = {}
            for line in run.stdout.splitlines():
                f = line.split()
                if len(f) == 3 and f[0] == "result":
                    r[f[1]] = float(f[2])
            if run.returncode != 0 or not r:
                lines.append(f"| {label} | failed (status {run.returncode}) ||||||||")
                continue
            if compressor != "none":  # every rank sends its compressed payload: no all-reduce moves less
                bound = r.get("bytes_per_step", 0) / bw
            elif config.startswith("ps"):
                bound = ps_server_bound(p, grad, bw, alpha)
            else:
                bound = ring_bound(p, grad, bw, alpha, buckets)
            lines.append(f"| {label} | {r['images_per_second']:.1f} | " + " | ".join(
                f"{1e3 * r[k]:.0f}" for k in ["load", "forward", "backward", "comm_exposed", "comm_hidden",
                                              "update"]) + f" | {1e3 * bound:.0f} | "
                         + (f"{r['bytes_per_step'] / 1e6:.2f} |" if "bytes_per_step" in r else "n/a |"))
            results.append(dict(link=link, hosts=p, delay=delay, strategy=config, compressor=compressor,
                                comm_bound_seconds=bound, **r))
    finally:
        cluster("down")
    return "\n".join(lines), results


def main():
    a = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    a.add_argument("--build", default=os.path.join(ROOT, "build"))
    a.add_argument("--links", default="1gbit,10gbit")
    a.add_argument("--hosts", default="2,3")
    a.add_argument("--delay", default="0us")  # needs netem in the kernel
    a.add_argument("--max", type=int, default=16 << 20)
    a.add_argument("--iterations", type=int, default=10)
    a.add_argument("--dist-link", default="1gbit")
    a.add_argument("--dist-hosts", type=int, default=3)
    a.add_argument("--dist-steps", type=int, default=10)
    a.add_argument("--dist-configs", default="ring,mpi,ps-sync,ps-async,ps-stale2")
    a.add_argument("--dist-compress", default="", help="compressors to run the ring with too, comma-separated")
    a.add_argument("--no-dist", action="store_true")
    a.add_argument("--ranks-per-host", type=int, default=1,
                   help="K > 1: K ranks a host, and the all-reduce table adds the hierarchical transport and han")
    a.add_argument("--min", type=int, default=4096, help="smallest all-reduce, bytes (sizes grow 4x)")
    a.add_argument("--predict", default="8x16", help="hosts x ranks at which to predict the bounds")
    a.add_argument("--run-timeout", type=float, default=300, help="seconds one mpirun of the hierarchical table may take")
    a.add_argument("--device", action="store_true",
                   help="a 16-core machine's run: 4 hosts x 4 ranks, 10gbit, 25 KiB to 25 MiB, no dist")
    a.add_argument("--out", default=".")
    args = a.parse_args()
    if args.device:
        args.links, args.hosts, args.ranks_per_host, args.no_dist = "10gbit", "4", 4, True
        args.min, args.max = 25 << 10, 25 << 20
    if subprocess.run([CLUSTER, "check"], env=ENV).returncode != 0:
        sys.exit(77)
    cluster("down")
    try:
        run(args)
    finally:
        cluster("down", check=False)


def run(args):
    tables, results = [], []
    for link in [l for l in args.links.split(",") if l != "none"]:
        for p in map(int, args.hosts.split(",")):
            if args.ranks_per_host > 1:
                t, r = hierarchical_table(args.build, link, p, args.ranks_per_host, args.delay, args)
            else:
                t, r = comm_table(args.build, link, p, args.delay, args)
            print(t + "\n", flush=True)
            tables.append(t), results.extend(r)
    os.makedirs(args.out, exist_ok=True)  # a new folder per run, as the README of results asks
    with open(os.path.join(args.out, "comm.md"), "w") as f:
        f.write("\n\n".join(tables) + "\n")
    if not args.no_dist:
        t, r = dist_table(args.build, args.dist_link, args.dist_hosts, args.delay, args)
        print(t, flush=True)
        results.extend(r)
        with open(os.path.join(args.out, "dist.md"), "w") as f:
            f.write(t + "\n")
    with open(os.path.join(args.out, "results.json"), "w") as f:
        json.dump(results, f, indent=1)


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        cluster("down", check=False)
        sys.exit(130)
