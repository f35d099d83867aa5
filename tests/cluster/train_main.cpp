// Run by tests/cluster/with_cluster across the hosts of scripts/cluster: data-parallel training that goes on
// until --seconds have passed (checked between epochs), so that the test can cut a host's link or kill a rank.
//
//   train_main [ring|mpi|hier] [--seconds 60] [--timeout 5]      (hier: the ring's hierarchical transport)
//
// Every rank prints "train_main: rank R trains" after its first steps (the test acts once all have), and
// "train_main: rank R trained without failing" if nothing stopped it. --timeout is the strategy's
// timeout_seconds: how long a collective may wait before the job aborts naming the silent ranks.
//
// Each step lasts at least kStepPause, as a real net's does, so an epoch lasts 20 s, and "trains" comes at the
// first's 5th step: the test's fault lands inside the steps, whose collectives the strategy's watchdog watches,
// never in the agreement at an epoch's start, which waits without limit (trainer.hpp). A link cut while the ranks
// wait there is found by TCP and the launcher instead (about 15 s), which name the host but not the rank: with
// epochs of 5 steps of a millisecond, 1 run in 14.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "../support/corners.hpp"
#include "cli/cli.hpp"
#include "sinew/backend/onednn.hpp"
#include "sinew/comm/mpi.hpp"
#include "sinew/data.hpp"
#include "sinew/dist/mpi_allreduce.hpp"
#include "sinew/dist/ring_allreduce.hpp"
#include "sinew/trainer.hpp"

namespace {
using namespace sinew;
constexpr std::size_t kStepsPerEpoch = 1000, kStepsBeforeTrains = 5;
constexpr auto kStepPause = std::chrono::milliseconds(20);
using SmallNet = Sequential<Input<1, 12, 12>, Conv2d<4, 3>, ReLU, MaxPool<2>, Flatten, Dense<16>, Tanh, Dense<2>>;

template <class Strategy>
int train(comm::Mpi& world, double seconds, double timeout, bool hierarchical = false) {
  const int r = world.rank(), p = world.size();
  data::LoaderOptions o;
  o.batch_size = 8;
  o.drop_last = true;
  o.mean = {0.3f};
  o.std = {0.25f};
  o.rank = r, o.world_size = p;
  data::CachedLoader loader(test::corners(kStepsPerEpoch * o.batch_size * std::size_t(p), 3), o);
  typename Strategy::options so;
  so.bucket_bytes = 256;
  so.timeout_seconds = timeout;
  if constexpr (requires { so.transport; })
    if (hierarchical) so.transport = dist::RingTransport::hierarchical;
  Trainer<SmallNet, backend::OneDnn, Strategy> trainer({.threads = 1}, {.lr = 0.01f}, Strategy(so, world));
  trainer.set_step_callback([r](const StepInfo& step) {
    if (step.epoch == 0 && step.step + 1 == kStepsBeforeTrains) {
      std::printf("train_main: rank %d trains\n", r);
      std::fflush(stdout);
    }
    std::this_thread::sleep_for(kStepPause);
  });
  const auto start = std::chrono::steady_clock::now();
  while (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() < seconds) {
    trainer.train_epoch(loader);
  }
  std::printf("train_main: rank %d trained without failing\n", r);
  return 0;
}
}  // namespace

int main(int argc, char** argv) try {
  std::string strategy = "ring";
  double seconds = 60, timeout = 5;
  CLI::App app("Trains until --seconds pass, for the tests across hosts", "train_main");
  app.add_option("strategy", strategy, "the all-reduce")->capture_default_str()->check(CLI::IsMember({"ring", "mpi", "hier"}));
  app.add_option("--seconds", seconds, "how long to train")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--timeout", timeout, "the strategy's timeout_seconds")->capture_default_str()->check(CLI::PositiveNumber);
  cli::parse(app, argc, argv);
  comm::Mpi world;
  if (strategy == "mpi") return train<dist::MpiAllReduce<comm::Mpi>>(world, seconds, timeout);
  return train<dist::RingAllReduce<comm::Mpi>>(world, seconds, timeout, strategy == "hier");
} catch (const std::exception& e) {
  std::fprintf(stderr, "train_main: %s\n", e.what());
  return 1;
}
