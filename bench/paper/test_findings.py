#!/usr/bin/python3
"""Unit tests of run_matrix.py's verdicts on constructed records (ctest bench_paper_findings; no run, no build):
a comparison of one configuration or one kernel with itself is never "reproduced", a ratio inside the noise floor
is "not reproduced" (so "direction only" at best), the A/A pair sets the floor, the findings that cannot differ
here say "untestable here", Table V is the paper's residual in seconds per epoch of the paper's length, and
--hosts places a worker per host with its servers beside it.

  /usr/bin/python3 bench/paper/test_findings.py
"""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run_matrix as rm  # noqa: E402

# What each system's preset runs (as the targets' records say).
KIND = {("tensorflow", "sync"): ("eigen", "ring_allreduce", "cached"),
        ("tensorflow", "async"): ("eigen", "parameter_server", "cached"),
        ("pytorch", "sync"): ("onednn", "ring_allreduce", "streaming"),
        ("mxnet", "sync"): ("onednn", "parameter_server", "streaming"),
        ("mxnet", "async"): ("onednn", "parameter_server", "streaming"),
        ("chainermn", "sync"): ("onednn", "mpi_allreduce", "cached"),
        ("cntk", "sync"): ("onednn", "mpi_allreduce+onebit", "cached")}


def record(system, mode, step, net="lenet5_cifar10", variant="preset", phases=None, ops=None, repeats=None,
           rss=100e6, params=62006):
    """A schema-3 record with the step time `step` (its repeats `repeats`, default three equal ones)."""
    backend, strategy, loader = KIND[(system, mode)]
    if (system, variant) == ("cntk", "one_bit=off"):
        strategy = "mpi_allreduce"  # CNTK<Net>::without_one_bit is ChainerMN's type
    if variant == "loader=cached":
        loader = "cached"
    repeats = repeats or [step] * 3
    ph = {"load": 0.1 * step, "forward": 0.3 * step, "backward": 0.4 * step, "comm_exposed": 0.2 * step,
          "comm_hidden": 0.0, "update": 0.0}
    ph.update(phases or {})
    name, dataset = net.rsplit("_", 1)
    return {"schema": rm.SCHEMA, "system": system, "mode": mode, "variant": variant, "net": name,
            "dataset": dataset, "backend": backend, "strategy": strategy, "loader": loader,
            "sharding": "disjoint", "workers": 3, "servers": 3 if strategy == "parameter_server" else 0,
            "step_seconds": {"median": rm.median(repeats), "min": min(repeats), "max": max(repeats),
                             "repeats": repeats},
            "phases_seconds_per_step": ph, "operators_seconds_per_step": ops or {"convolution": 0.3 * step},
            "peak_rss_bytes_per_rank": [rss] * 6, "gradient_bytes_per_step": 330920.0, "parameters": params}


def row(rows, fid):
    return next(r for r in rows if r["id"] == fid)


class Verdict(unittest.TestCase):
    def test_bands(self):
        self.assertEqual(rm.verdict(2.5, floor=0.1, paper=2.65), rm.REPRODUCED)
        self.assertTrue(rm.verdict(1.5, floor=0.1, paper=2.65).startswith(rm.DIRECTION))
        self.assertTrue(rm.verdict(0.5, floor=0.1, paper=2.65).startswith(rm.OPPOSITE))
        self.assertTrue(rm.verdict(None, floor=0.1, paper=2.65).startswith(rm.UNTESTABLE))
        # Without the paper's figure a clear difference is the direction, never a reproduction by magnitude.
        self.assertTrue(rm.verdict(3.0, floor=0.1).startswith(rm.DIRECTION))

    def test_a_ratio_inside_the_floor_is_direction_only_at_best(self):
        for x in (1.0, 1.04, 1.099, 0.93):
            for paper in (None, 1.05, x):
                v = rm.verdict(x, floor=0.1, paper=paper)
                self.assertFalse(v.startswith(rm.REPRODUCED), (x, paper, v))
                self.assertFalse(v.startswith(rm.OPPOSITE), (x, paper, v))
                self.assertTrue(v.startswith(rm.NOT_REPRODUCED), (x, paper, v))

    def test_one_kernel_against_itself_is_never_reproduced(self):
        for x in (0.5, 1.0, 1.35, 29.7, 100.0):
            v = rm.verdict(x, floor=0.05, paper=29.7, same_kernel="oneDNN's batch norm on both sides")
            self.assertTrue(v.startswith(rm.UNTESTABLE), v)

    def test_a_self_comparison_of_records_is_untestable(self):
        # TensorFlow's backend swapped to oneDNN with TensorFlow's strategy and loader is not PyTorch, but the
        # CNTK swap without 1-bit SGD is ChainerMN: a finding between those two would be an A/A pair.
        a = record("cntk", "sync", 0.010, variant="one_bit=off")
        b = record("chainermn", "sync", 0.004)
        self.assertTrue(rm.same_configuration(a, b))
        self.assertFalse(rm.same_configuration(record("pytorch", "sync", 0.01), record("mxnet", "sync", 0.01)))


class Findings(unittest.TestCase):
    def matrix(self, steps, extra=()):
        return rm.Matrix([record(s, md, x) for (s, md), x in steps.items()] + list(extra))

    def test_the_aa_pair_sets_the_floor(self):
        m = self.matrix({("chainermn", "sync"): 0.010},
                        [record("cntk", "sync", 0.012, variant="one_bit=off")])
        self.assertAlmostEqual(m.floor, 0.2)
        # A 15% gap between TensorFlow and PyTorch is inside that floor: not reproduced.
        m = self.matrix({("chainermn", "sync"): 0.010, ("tensorflow", "sync"): 0.0115, ("pytorch", "sync"): 0.010},
                        [record("cntk", "sync", 0.012, variant="one_bit=off")])
        self.assertTrue(row(rm.findings(m), "F1")["reproduced"].startswith(rm.NOT_REPRODUCED))

    def test_repeat_spread_sets_the_floor_without_an_aa_pair(self):
        m = rm.Matrix([record("pytorch", "sync", 0.010, repeats=[0.009, 0.010, 0.012])])
        self.assertAlmostEqual(m.floor, 0.3)

    def test_f1_reproduced_within_25_percent(self):
        m = self.matrix({("tensorflow", "sync"): 0.025, ("pytorch", "sync"): 0.010})
        self.assertEqual(row(rm.findings(m), "F1")["reproduced"], rm.REPRODUCED)
        m = self.matrix({("tensorflow", "sync"): 0.005, ("pytorch", "sync"): 0.010})
        self.assertTrue(row(rm.findings(m), "F1")["reproduced"].startswith(rm.OPPOSITE))

    def test_what_cannot_differ_here_is_untestable(self):
        steps = {sm: 0.01 * (i + 1) for i, sm in enumerate(KIND)}
        ops = {"tanh_backward": 1.0, "batch_norm": 1.0, "convolution": 1.0}
        extra = [record("mxnet", "sync", 0.05, ops={"tanh_backward": 34.8, "convolution": 1.0})]
        m = rm.Matrix([record(s, md, x, ops=ops) for (s, md), x in steps.items() if (s, md) != ("mxnet", "sync")]
                      + extra)
        rows = rm.findings(m)
        for fid in ("F6", "F10", "F17", "S1"):
            self.assertTrue(row(rows, fid)["reproduced"].startswith(rm.UNTESTABLE), fid)
        # F13's second half: MXNet's tanh_backward 34.8x PyTorch's, exactly the paper's, is still the same kernel.
        self.assertIn(f"second part: {rm.UNTESTABLE}", row(rows, "F13")["reproduced"])

    def test_f19_compares_another_batch_norm_not_the_presets(self):
        net = "resnet18_cifar10"
        bn = {"batch_norm": 0.001, "batch_norm_backward": 0.001}
        recs = [record("pytorch", "sync", 0.1, net=net, ops=bn), record("mxnet", "sync", 0.1, net=net, ops=bn)]
        rows = rm.findings(rm.Matrix(recs))
        self.assertTrue(row(rows, "F19")["reproduced"].startswith(rm.UNTESTABLE))  # no swap measured
        recs.append(record("pytorch", "sync", 0.1, net=net, variant="backend=mix-bn-eigen",
                           ops={"batch_norm": 0.03, "batch_norm_backward": 0.02}))
        self.assertTrue(row(rm.findings(rm.Matrix(recs)), "F19")["reproduced"].startswith(rm.REPRODUCED))

    def test_f7_is_a_median_not_a_mean_one_outlier_makes(self):
        nets = ["lenet5_cifar10", "alexnet_cifar10", "resnet18_cifar10"]
        recs = []
        for net, tf_load in zip(nets, (0.001, 0.001, 0.001 / 112)):
            recs += [record("tensorflow", "sync", 0.01, net=net, phases={"load": tf_load}),
                     record("pytorch", "sync", 0.01, net=net, phases={"load": 0.001}),
                     record("mxnet", "sync", 0.01, net=net, phases={"load": 0.001})]
        self.assertTrue(row(rm.findings(rm.Matrix(recs)), "F7")["reproduced"].startswith(rm.NOT_REPRODUCED))

    def test_table5_is_the_residual_per_paper_epoch(self):
        m = rm.Matrix([record("pytorch", "sync", 0.010)])  # load + forward + backward = 80% of the step
        cells = {(s, md): (resid, exposed) for s, md, _, resid, exposed in rm.table5(m)}
        resid, exposed = cells[("pytorch", "sync")]
        self.assertAlmostEqual(resid, 0.002 * rm.PAPER_STEPS_PER_EPOCH)
        self.assertAlmostEqual(exposed, 0.002 * rm.PAPER_STEPS_PER_EPOCH)
        self.assertEqual(rm.PAPER_STEPS_PER_EPOCH, 396)
        self.assertIsNone(cells[("tensorflow", "sync")][0])

    def test_every_verdict_is_one_of_the_five(self):
        m = self.matrix({sm: 0.01 * (i + 1) for i, sm in enumerate(KIND)})
        for r in rm.findings(m):
            self.assertTrue(any(v in r["reproduced"] for v in rm.VERDICTS), r)


class Placement(unittest.TestCase):
    """--hosts: one worker per host, a parameter server's servers beside them, each host on cores of its own."""

    class Args:
        threads = 0

        def __init__(self, hosts):
            self.hosts = hosts

    def test_two_hosts_of_one_core(self):
        cores = os.cpu_count()
        if cores < 2:
            self.skipTest("needs 2 cores")
        args = self.Args(2)
        self.assertEqual(rm.ranks_of(args, "pytorch", "sync"), (2, 2))
        self.assertEqual(rm.ranks_of(args, "mxnet", "sync"), (2, 4))
        cmd, threads, binding = rm.mpirun_command(args, "mxnet", "sync", 4)
        self.assertEqual(cmd[:2], [rm.CLUSTER, "run"])
        self.assertIn("--map-by", cmd)
        self.assertEqual(cmd[cmd.index("--map-by") + 1], "node")  # worker i and server i on host i
        self.assertIn("2 ranks per host", binding)
        self.assertEqual(threads, max(1, cores // 2 // 2))
        if cores == 2:
            self.assertIn("oversubscribed", binding)  # a worker and its server on one core
        cmd, threads, binding = rm.mpirun_command(args, "pytorch", "sync", 2)
        self.assertIn("of its own (taskset)", binding)
        self.assertNotIn("oversubscribed", binding)

    def test_more_hosts_than_cores_share_them(self):
        args = self.Args(os.cpu_count() + 1)
        _, threads, binding = rm.mpirun_command(args, "pytorch", "sync", args.hosts)
        self.assertEqual(threads, 1)
        self.assertIn("shared by the", binding)

    def test_parameter_server_targets_for_other_host_counts(self):
        self.assertEqual(rm.target_of("mxnet", "sync", "lenet5_cifar10", 2), "paper_mxnet_lenet5_cifar10_2hosts")
        self.assertEqual(rm.target_of("mxnet", "sync", "lenet5_cifar10", 3), "paper_mxnet_lenet5_cifar10")
        self.assertEqual(rm.target_of("pytorch", "sync", "lenet5_cifar10", 2), "paper_pytorch_lenet5_cifar10")



class Commits(unittest.TestCase):
    def test_one_commit_is_said_once_several_with_their_nets(self):
        a, b = record("pytorch", "sync", 0.01), record("pytorch", "sync", 0.5, net="resnet18_cifar10")
        a["commit"] = b["commit"] = "c1"
        self.assertEqual(rm.commits_said([a, b]), "commit c1")
        b["commit"] = "c2"
        self.assertEqual(rm.commits_said([a, b]), "commits c1 (lenet5_cifar10), c2 (resnet18_cifar10)")

    def test_the_output_folder_is_not_dirt(self):
        out = os.path.join(rm.ROOT, "bench", "paper", "results")
        with_out, without = rm.git_commit(out), rm.git_commit()
        if without is None:
            self.skipTest("not a git checkout")
        # Whatever the tree's state, excluding a folder can only remove "-dirty", never add it.
        self.assertEqual(with_out.removesuffix("-dirty"), without.removesuffix("-dirty"))
        self.assertFalse(with_out.endswith("-dirty") and not without.endswith("-dirty"))


class ReportOnly(unittest.TestCase):
    def test_a_folder_written_by_parts_gets_one_report_over_all_its_records(self):
        import json
        import tempfile
        with tempfile.TemporaryDirectory() as d:
            os.makedirs(os.path.join(d, "runs"))
            for i, (system, mode) in enumerate(KIND):
                for net, commit in (("lenet5_cifar10", "c1"), ("resnet18_cifar10", "c2")):
                    r = record(system, mode, 0.01 * (i + 1), net=net)
                    r.update({"commit": commit, "cpu_model": "test CPU", "local_batch": 42, "global_batch": 126,
                              "binding": "none", "threads_per_rank": 1, "ranks": 3, "epochs": 1,
                              "steps_per_epoch": 10, "warmup_steps": 2, "timed_steps": 8, "data_generated": False,
                              "time_per_epoch_seconds": 10 * r["step_seconds"]["median"],
                              "accuracy": {"train": 0.5, "test": 0.4, "test_samples": 100}})
                    with open(os.path.join(d, "runs", rm.run_name(system, mode, "preset", net) + ".json"), "w") as f:
                        json.dump(r, f)
            try:
                rm.main(["--report-only", "--out", d])
            except SystemExit as e:
                self.assertIn(e.code, (0, None))
            with open(os.path.join(d, "REPRODUCTION.md")) as f:
                report = f.read()
            with open(os.path.join(d, "findings.json")) as f:
                found = json.load(f)
        self.assertIn("commits c1 (lenet5_cifar10), c2 (resnet18_cifar10)", report)
        f1 = [x for x in found if x["id"] == "F1"][0]
        self.assertIn("resnet18_cifar10", f1["sinew"])  # both parts' records are judged together

if __name__ == "__main__":
    unittest.main(verbosity=2)
