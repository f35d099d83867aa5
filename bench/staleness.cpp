// bench/staleness: the parameter server's sync modes on one small problem, for accuracy rather than speed.
// Two workers and one server train a small CNN (two convolutions, two dense layers, 18k parameters) on generated
// 10-class 16x16 images (tests/support/noisy_templates.hpp); worker 0 sleeps --slow-ms after each step so that worker 1 runs ahead as far as the mode
// lets it. Prints one JSON row: held-out accuracy, the servers' counters and the staleness histogram of the
// gradients applied (dist::ServerCounters::staleness).
//
//   mpirun -np 3 build/bench/staleness --mode sync|async|stale0|stale1|stale2|stale4|stale8
//          [--momentum 0.9] [--lr 0.02] [--epochs 6] [--slow-ms 4] [--seed 1] [--signal 0.4] [--staleness-lr]
//   bench/staleness.py   runs the sweep (every mode x momentum 0 and 0.9) and prints the tables
//
// --staleness-lr divides each gradient's learning rate by its staleness + 1 on the server
// (ParameterServer::options::staleness_scaled_lr), the staleness-aware step of Zhang et al. (IJCAI 2016).
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include "cli/cli.hpp"
#include "sinew/sinew.hpp"
#include "../tests/support/noisy_templates.hpp"

namespace {
using namespace sinew;
using Net = test::TemplateNet;  // the problem of tests/dist/test_parameter_server.cpp's order test
using Server = dist::ParameterServer<comm::Mpi, 1>;

struct Settings {
  std::string mode = "sync";
  float lr = 0.02f, momentum = 0.9f;
  int epochs = 6, slow_ms = 4;
  std::uint64_t seed = 1;
  bool staleness_lr = false;
  float signal = 0.4f;  // the template's share of each pixel; the rest is noise
};

data::CachedLoader loader(const data::Dataset& d, int worker, int workers, bool train, std::uint64_t seed) {
  data::LoaderOptions o;
  o.batch_size = 16, o.seed = seed, o.shuffle = train;
  o.mean = {0.5f}, o.std = {0.2f};
  o.rank = worker, o.world_size = workers;
  return data::CachedLoader(d, o);
}

template <class Mode>
int run(const Settings& s) {
  comm::Mpi world;
  const int workers = world.size() - 1;
  Trainer<Net, backend::OneDnn, Server, Mode> trainer(
      {.threads = 1, .seed = s.seed}, {.lr = s.lr, .momentum = s.momentum, .weight_decay = 5e-4f},
      Server({.configuration = "bench/staleness", .staleness_scaled_lr = s.staleness_lr}, world));
  const data::Dataset train_set = test::noisy_templates(2400, 100 + s.seed, s.signal),
                      test_set = test::noisy_templates(600, 200, s.signal);
  auto train = loader(train_set, trainer.dist().worker_index(), workers, true, s.seed);
  auto test = loader(test_set, 0, 1, false, s.seed);
  if (trainer.dist().is_worker() && trainer.dist().worker_index() == 0 && s.slow_ms > 0)
    trainer.add_step_callback([&](const StepInfo&) { std::this_thread::sleep_for(std::chrono::milliseconds(s.slow_ms)); });
  for (int e = 0; e < s.epochs; ++e) trainer.train_epoch(train);
  const EvalStats eval = trainer.evaluate(test);
  const dist::JobCounters job = trainer.dist().gather_counters();
  if (world.rank() != 0) return 0;
  std::printf("{\"mode\": \"%s\", \"momentum\": %g, \"lr\": %g, \"staleness_lr\": %s, \"slow_ms\": %d, \"seed\": %llu, "
              "\"accuracy\": %.4f, \"loss\": %.4f, \"steps_per_worker\": [%zu, %zu], \"held_replies\": %zu, "
              "\"max_lead\": %d, \"mean_staleness\": %.3f, \"staleness\": [",
              s.mode.c_str(), double(s.momentum), double(s.lr), s.staleness_lr ? "true" : "false", s.slow_ms,
              static_cast<unsigned long long>(s.seed), eval.accuracy, eval.loss, job.steps_per_worker[0],
              job.steps_per_worker[1], job.held_replies, job.max_lead, job.servers[0].mean_staleness());
  for (std::size_t i = 0; i < job.servers[0].staleness.size(); ++i)
    std::printf("%s%zu", i ? ", " : "", job.servers[0].staleness[i]);
  std::printf("]}\n");
  return 0;
}
}  // namespace

int main(int argc, char** argv) {
  Settings s;
  CLI::App app{"bench/staleness: the parameter server's sync modes, for accuracy", "staleness"};
  app.add_option("--mode", s.mode, "sync, async or staleK")
      ->check(CLI::IsMember({"sync", "async", "stale0", "stale1", "stale2", "stale4", "stale8"}));
  app.add_option("--lr", s.lr, "learning rate");
  app.add_option("--momentum", s.momentum, "SGD momentum");
  app.add_option("--epochs", s.epochs, "epochs");
  app.add_option("--slow-ms", s.slow_ms, "worker 0 sleeps this long after each step");
  app.add_option("--seed", s.seed, "seed of the weights, the shuffle and the training images");
  app.add_option("--signal", s.signal, "the class template's share of each pixel (the rest is noise)");
  app.add_flag("--staleness-lr", s.staleness_lr, "divide the learning rate by staleness + 1 on the server");
  sinew::cli::parse(app, argc, argv);
  int rc = 0;
  if (s.mode == "sync") rc = run<sinew::Sync>(s);
  else if (s.mode == "async") rc = run<sinew::Async>(s);
  else if (s.mode == "stale0") rc = run<sinew::BoundedStaleness<0>>(s);
  else if (s.mode == "stale1") rc = run<sinew::BoundedStaleness<1>>(s);
  else if (s.mode == "stale2") rc = run<sinew::BoundedStaleness<2>>(s);
  else if (s.mode == "stale4") rc = run<sinew::BoundedStaleness<4>>(s);
  else rc = run<sinew::BoundedStaleness<8>>(s);
  return rc;
}
