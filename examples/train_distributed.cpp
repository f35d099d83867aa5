// train_distributed: LeNet-5 on Fashion-MNIST, data-parallel over MPI. Each worker trains on its own shard
// (reshuffled every epoch from a shared seed). With all-reduce (ring, mpi) every rank is a worker and the
// gradients are averaged every step; with --strategy ps the last rank is a parameter server that runs the
// optimizer, in the --mode given: sync (averaged every step), async (applied as they come) or stale2
// (asynchronous, but no worker more than 2 steps ahead of the slowest).
//
//   mpirun -np 2 --bind-to core build/examples/train_distributed [--strategy ring|mpi|ps] [--mode sync|async|stale2]
//          [--every-worker-reads-all] [--epochs 5] [--batch 32] [--lr 0.05] [--threads 1] [--bucket-kb 1024]
//          [--overlap on|off] [--data DIR] [--json FILE] [--checkpoint-dir D] [--checkpoint-every 1] [--resume]
//          [--quiet] [--progress-every 10] [--plain-progress] [--trace FILE]
//
// Rank 0 shows the progress within each epoch, redrawn in place: Open MPI gives its ranks a terminal even when
// mpirun's own output goes to a file, so for a log add --plain-progress (a line every --progress-every seconds).
// --batch is the local batch: the global batch is batch x workers. --every-worker-reads-all gives each worker
// the whole dataset in its own order instead of a disjoint shard (asynchronous TensorFlow's input pipelines).
// With all-reduce, gradients are summed in buckets of --bucket-kb KiB (0: one for all), each started during
// backward unless --overlap off. As root, Open MPI also needs --allow-run-as-root, and --oversubscribe beyond
// the number of cores. --checkpoint-dir D (seen by every rank) saves the run every --checkpoint-every epochs
// and after the last, the parameter server's shard included; --resume continues it, up to --epochs epochs in
// all, on as many ranks or on another number (after a machine died: see docs/checkpoints.md). SIGUSR1 or
// SIGTERM to a rank (Slurm's --signal: docs/several-hosts.md; to mpirun, SIGUSR1, which it passes on) then
// saves the run there after the current step, and every rank exits with status 75: --resume continues it.
// --trace FILE writes every rank's training steps as one Chrome trace, clocks aligned to rank 0's
// (sinew/metrics/timeline.hpp; Perfetto opens it, tools/trace_to_svg.py draws a step).
#include <cstdio>
#include <exception>
#include <optional>
#include <vector>

#include "cli/cli.hpp"
#include "sinew/sinew.hpp"
#include "support/checkpoints.hpp"
#include "support/report.hpp"
#include "support/trace.hpp"

using Net     = sinew::nets::LeNet5<sinew::Input<1, 32, 32>>;  // 61,706 parameters
using Backend = sinew::backend::OneDnn;                        // oneDNN primitives
using Optim   = sinew::optim::Sgd;                             // momentum SGD
using Ring    = sinew::dist::RingAllReduce<sinew::comm::Mpi>;  // bandwidth-optimal ring
using Native  = sinew::dist::MpiAllReduce<sinew::comm::Mpi>;   // MPI's own all-reduce
using Server  = sinew::dist::ParameterServer<sinew::comm::Mpi, 1>;  // the last rank serves

/// The command line, as parsed.
struct Settings {
  std::string strategy = "ring", mode = "sync", overlap = "on";
  std::string dir = sinew::data::default_fashion_mnist_dir().string();
  int epochs = 5, batch = 32, threads = 1;
  int bucket_kb = int(sinew::dist::kDefaultBucketBytes / 1024);
  std::uint64_t seed = 0;
  double lr = 0.05, momentum = 0.9;
  bool every_worker_reads_all = false;
  std::string json;
  sinew::examples::Checkpoints checkpoints;
  sinew::examples::ProgressSettings progress;
  sinew::examples::Trace trace;
};

template <class Strategy, class Mode = sinew::Sync>
int run(const Settings& s, const std::string& strategy_name) {
  using Train = sinew::Trainer<Net, Backend, Strategy, Mode, Optim>;
  sinew::comm::Mpi world;
  const std::string& dir = s.dir;
  const int epochs = s.epochs;
  sinew::data::LoaderOptions lo;
  lo.batch_size = s.batch;
  lo.seed = s.seed;
  lo.drop_last = true;  // every rank takes as many steps
  lo.pad_to_height = lo.pad_to_width = 32;
  lo.mean = {0.2860f};
  lo.std = {0.3530f};
  if (s.every_worker_reads_all) lo.sharding = sinew::data::Sharding::every_worker_reads_all;
  const sinew::TrainerOptions to{.threads = s.threads, .seed = lo.seed};
  const Optim::options oo{.lr = float(s.lr), .momentum = float(s.momentum)};
  typename Strategy::options so;
  if constexpr (requires { so.bucket_bytes; so.overlap; }) {  // the all-reduce strategies
    so.bucket_bytes = std::size_t(s.bucket_kb) * 1024;
    so.overlap = s.overlap == "on";
  }
  const auto& checkpoints = s.checkpoints;

  so.configuration = "lenet5 fashion-mnist batch=" + std::to_string(lo.batch_size) +
                     " sharding=" + std::to_string(int(lo.sharding));
  Train trainer(to, oo, Strategy(so, world));
  const int workers = trainer.dist().workers();
  // A parameter server's servers read no data: they build no loader and serve each epoch (serve_epoch()).
  bool serves = false;
  if constexpr (requires { trainer.dist().server_index(); }) serves = !trainer.dist().is_worker();
  lo.rank = trainer.dist().worker_index();  // shards go to workers
  lo.world_size = workers;
  std::optional<sinew::data::CachedLoader> train, test;
  if (!serves) {
    train.emplace(sinew::data::load_fashion_mnist(sinew::data::Split::train, dir), lo);
    lo.shuffle = false;
    lo.drop_last = false;
    lo.rank = 0, lo.world_size = 1;  // every worker evaluates the whole test set with the same parameters
    lo.sharding = sinew::data::Sharding::disjoint;
    test.emplace(sinew::data::load_fashion_mnist(sinew::data::Split::test, dir), lo);
  }
  const bool root = world.rank() == 0;  // a worker with every strategy
  if (root)
    std::printf("LeNet-5 on Fashion-MNIST, %s, %d ranks (%d workers) x %d threads, local batch %d (global %d)\n",
                strategy_name.c_str(), world.size(), workers, trainer.context().threads(), lo.batch_size,
                lo.batch_size * workers);

  const auto progress = s.progress.attach(trainer, root, epochs, workers);  // rank 0 speaks for every worker
  std::vector<sinew::examples::EpochRecord> records;
  s.trace.start(trainer, std::size_t(epochs) * (train ? train->batches_per_epoch() : 1));
  for (int e = checkpoints.start(trainer, root); e < epochs; ++e) {
    sinew::examples::EpochRecord r;
    if constexpr (requires { trainer.dist().server_index(); })
      if (serves) r.train = trainer.serve_epoch();
    if (!serves) {
      r.train = trainer.train_epoch(*train);
      r.test = trainer.evaluate(*test);
    }
    r.train.images_per_second *= workers;  // every worker processes its own shard at about the same pace
    if (root) {
      sinew::examples::print_epoch(r, epochs);
      std::printf("           phases per epoch (s): load %.2f forward %.2f backward %.2f comm %.2f update %.2f"
                  " (comm hidden behind backward %.2f)\n",
                  r.train.phases.load, r.train.phases.forward, r.train.phases.backward, r.train.phases.comm,
                  r.train.phases.update, r.train.phases.comm_hidden);
    }
    records.push_back(r);
    checkpoints.after_epoch(trainer, e, epochs);  // every rank
  }
  s.trace.write(trainer, root);
  if constexpr (requires { trainer.dist().gather_counters(); }) {
    // Collective: every rank takes part; rank 0 prints what each worker and server did.
    const sinew::dist::JobCounters c = trainer.dist().gather_counters();
    if (root) {
      std::printf("parameter server: steps per worker");
      for (const std::size_t s : c.steps_per_worker) std::printf(" %zu", s);
      std::printf(", max lead %d, replies held back %zu\n", c.max_lead, c.held_replies);
    }
  }
  if (root && !s.json.empty()) {
    auto config = sinew::metrics::Json::object();
    config["net"] = "lenet5";
    config["dataset"] = "fashion-mnist";
    config["strategy"] = strategy_name;
    config["ranks"] = world.size();
    config["workers"] = workers;
    config["threads_per_rank"] = trainer.context().threads();
    config["local_batch"] = lo.batch_size;
    if constexpr (requires { so.bucket_bytes; so.overlap; }) {
      config["bucket_bytes"] = so.bucket_bytes;
      config["overlap"] = so.overlap;
    }
    config["lr"] = s.lr;
    sinew::metrics::save_json(sinew::examples::results_json("train_distributed", config, records,
                                                             trainer.images_per_second() * workers),
                              s.json);
  }
  return 0;
}

int main(int argc, char** argv) try {
  Settings s;
  CLI::App app{"LeNet-5 on Fashion-MNIST, data-parallel over MPI: mpirun -np N train_distributed [OPTIONS]",
               "train_distributed"};
  app.add_option("--strategy", s.strategy, "ring all-reduce, MPI_Allreduce, or a parameter server (the last rank)")
      ->capture_default_str()
      ->check(CLI::IsMember({"ring", "mpi", "ps"}));
  app.add_option("--mode", s.mode, "the parameter server's: synchronous, asynchronous, or staleness at most 2")
      ->capture_default_str()
      ->check(CLI::IsMember({"sync", "async", "stale2"}));
  app.add_flag("--every-worker-reads-all", s.every_worker_reads_all,
               "every worker reads the whole training set, in its own order (default: disjoint shards)");
  app.add_option("--epochs", s.epochs, "epochs in all (with --resume, counting the saved ones)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--batch", s.batch, "batch size of each worker")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--lr", s.lr, "learning rate")->capture_default_str();
  app.add_option("--momentum", s.momentum, "SGD momentum")->capture_default_str();
  sinew::cli::add_threads(app, s.threads, "compute threads of each rank");
  app.add_option("--seed", s.seed, "initialisation and shuffling")->capture_default_str();
  app.add_option("--bucket-kb", s.bucket_kb, "all-reduce bucket size in KiB (0: one bucket for all)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--overlap", s.overlap, "all-reduce buckets while backward computes")
      ->capture_default_str()
      ->check(CLI::IsMember({"on", "off"}));
  app.add_option("--data", s.dir, "the Fashion-MNIST IDX files")->option_text("DIR");
  sinew::cli::add_json(app, s.json);
  s.checkpoints.add_options(app);
  s.progress.add_options(app);
  s.trace.add_options(app);
  sinew::cli::parse(app, argc, argv);
  if (s.strategy != "ps" && s.mode != "sync")
    sinew::cli::fail(app, "--mode " + s.mode + " needs --strategy ps: all-reduce is synchronous");
  if (s.strategy == "ring") return run<Ring>(s, "ring all-reduce");
  if (s.strategy == "mpi") return run<Native>(s, "MPI_Allreduce");
  if (s.mode == "async") return run<Server, sinew::Async>(s, "parameter server, async");
  if (s.mode == "stale2") return run<Server, sinew::BoundedStaleness<2>>(s, "parameter server, bounded staleness 2");
  return run<Server, sinew::Sync>(s, "parameter server, sync");
} catch (const sinew::preempted& p) {  // a preemption signal: the run is saved in --checkpoint-dir
  std::fprintf(stderr, "train_distributed: %s\n", p.what());
  return p.exit_status();  // 75: run it again with --resume
} catch (const std::exception& e) {
  std::fprintf(stderr, "train_distributed: %s\n", e.what());
  return 1;
}
