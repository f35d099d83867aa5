// bench/elastic: training on after a rank dies (the all-reduce strategies' options.elastic), for accuracy and
// recovery time. LeNet-5 on Fashion-MNIST (Debian's dataset-fashion-mnist), SGD with momentum, every rank's
// share dealt from one permutation; rank --kill-rank kills itself (SIGKILL, as a machine that dies) after
// --kill-step steps, and the survivors go on without it. "ranks" in the row count workers (a parameter server's
// server, the last rank, besides). Prints one JSON row (rank 0 of the survivors): the
// held-out accuracy after each epoch, the recovery (lost ranks, seconds to shrink and take the state, seconds
// from the kill to the next completed step) and the run's settings.
//
//   mpirun --with-ft ulfm -np 3 build/bench/elastic --strategy ring|mpi --kill-rank 2 --kill-step 468
//   mpirun -np 2 build/bench/elastic --strategy ring            # the survivors alone, for comparison
//   mpirun --with-ft ulfm -np 4 build/bench/elastic --strategy ps --kill-rank 2 --kill-step 468  # 3 workers + 1 server
//          [--epochs 3] [--batch 64] [--lr 0.05] [--seed 1] [--dir /usr/share/...fashion-mnist]
//   bench/elastic.py   runs both (ring and MPI, seeds 1-3) and prints the table
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "cli/cli.hpp"
#include "sinew/backend/onednn.hpp"
#include "sinew/comm/mpi.hpp"
#include "sinew/data.hpp"
#include "sinew/dist/mpi_allreduce.hpp"
#include "sinew/dist/parameter_server.hpp"
#include "sinew/dist/ring_allreduce.hpp"
#include "sinew/metrics/json.hpp"
#include "sinew/nets/lenet5.hpp"
#include "sinew/trainer.hpp"

namespace {
using namespace sinew;
using Net = nets::LeNet5<Input<1, 32, 32>>;

struct Settings {
  std::string strategy = "ring", dir = data::default_fashion_mnist_dir().string();
  int epochs = 3, batch = 64, kill_rank = -1, kill_step = 0;
  double lr = 0.05, momentum = 0.9;
  std::uint64_t seed = 1;
};

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

template <class S>
int run(const Settings& s) {
  typename S::options so;
  so.configuration = "bench/elastic";
  so.elastic = s.kill_rank >= 0;
  using Train = Trainer<Net, backend::OneDnn, S, Sync, optim::Sgd>;
  Train trainer(TrainerOptions{.seed = s.seed}, optim::Sgd::options{.lr = float(s.lr), .momentum = float(s.momentum)},
                S(so));
  data::LoaderOptions lo;
  lo.batch_size = s.batch, lo.seed = s.seed, lo.drop_last = true;
  lo.pad_to_height = lo.pad_to_width = 32;
  lo.mean = {0.2860f}, lo.std = {0.3530f};
  lo.rank = trainer.dist().worker_index(), lo.world_size = trainer.dist().workers();
  data::CachedLoader train(data::load_fashion_mnist(data::Split::train, s.dir), lo);
  lo.shuffle = false, lo.rank = 0, lo.world_size = 1, lo.drop_last = false;
  data::CachedLoader test(data::load_fashion_mnist(data::Split::test, s.dir), lo);

  const int ranks = trainer.dist().workers();
  std::int64_t killed_ns = 0, again_ns = 0;
  const std::string stamp = "/tmp/sinew-bench-elastic-" + std::to_string(s.seed) + ".killed";
  trainer.set_step_callback([&](const StepInfo& i) {
    if (s.kill_rank >= 0 && i.steps_done == std::int64_t(s.kill_step) && trainer.dist().rank() == s.kill_rank &&
        trainer.recoveries().empty()) {
      std::ofstream(stamp) << now_ns() << "\n";
      raise(SIGKILL);
    }
    if (!trainer.recoveries().empty() && again_ns == 0) again_ns = now_ns();
  });
  std::vector<double> accuracy;
  for (int e = 0; e < s.epochs; ++e) {
    trainer.train_epoch(train);
    accuracy.push_back(trainer.evaluate(test).accuracy);
  }
  if (trainer.dist().rank() != 0) return 0;
  if (!trainer.recoveries().empty()) std::ifstream(stamp) >> killed_ns;
  metrics::Json row = metrics::Json::object();
  row["strategy"] = s.strategy;
  row["ranks_at_start"] = ranks;
  row["ranks_at_end"] = trainer.dist().workers();
  row["seed"] = s.seed;
  row["epochs"] = s.epochs;
  row["batch"] = s.batch;
  row["kill_step"] = s.kill_rank >= 0 ? s.kill_step : -1;
  row["steps"] = trainer.steps_done();
  metrics::Json acc = metrics::Json::array();
  for (const double a : accuracy) acc.push_back(a);
  row["test_accuracy"] = acc;
  if (!trainer.recoveries().empty()) {
    const Recovery& r = trainer.recoveries()[0];
    row["recovery_seconds"] = r.seconds;
    row["kill_to_next_step_seconds"] = double(again_ns - killed_ns) * 1e-9;
    row["recovered_at_step"] = r.step;
    row["redealt_from_sample"] = r.from_sample;
  }
  std::printf("%s\n", row.dump().c_str());
  return 0;
}
}  // namespace

int main(int argc, char** argv) try {
  Settings s;
  CLI::App app{"training on after a rank dies: LeNet-5 on Fashion-MNIST", "elastic"};
  app.add_option("--strategy", s.strategy, "ring, mpi or ps (Sync, one server: the last rank)")
      ->check(CLI::IsMember({"ring", "mpi", "ps"}));
  app.add_option("--epochs", s.epochs, "epochs");
  app.add_option("--batch", s.batch, "local batch");
  app.add_option("--lr", s.lr, "learning rate");
  app.add_option("--seed", s.seed, "initialisation and shuffling seed");
  app.add_option("--kill-rank", s.kill_rank, "this rank kills itself (SIGKILL); the others go on (elastic)");
  app.add_option("--kill-step", s.kill_step, "after this many steps");
  app.add_option("--dir", s.dir, "Fashion-MNIST's directory");
  sinew::cli::parse(app, argc, argv);
  if (s.strategy == "ps") return run<dist::ParameterServer<comm::Mpi, 1>>(s);
  return s.strategy == "ring" ? run<dist::RingAllReduce<comm::Mpi>>(s) : run<dist::MpiAllReduce<comm::Mpi>>(s);
} catch (const std::exception& e) {
  std::fprintf(stderr, "elastic: %s\n", e.what());
  return 1;
}
