// bench/scaling/images_per_second: training images/s of one distribution configuration, one run under mpirun;
// bench/paper/scaling.py runs it for every number of workers, configuration and batch size (the usability
// paper's Figs. 6-7) and draws the figures.
//
//   mpirun -np R build/bench/scaling/scaling_images_per_second --config allreduce-sync|ps-sync|ps-async|ps-stale2
//          [--net resnet50|lenet5] [--batch 128] [--warmup 3] [--steps 10] [--threads 1]
//
// With all-reduce every rank is a worker; with the parameter server the last rank serves (R = workers + 1).
// Each worker trains --warmup steps, then --steps timed steps, on generated CIFAR-10-shaped images (uint8 in
// memory, so loading is a conversion). images/s = every worker's timed images over the slowest worker's wall
// time of the timed epoch (the parameter server's final pull included). Prints "result KEY VALUE" lines.
#include <mpi.h>

#include <cstdio>
#include <exception>
#include <string>

#include "cli/cli.hpp"
#include "configs.hpp"

namespace {

namespace scaling = sinew::bench::scaling;
using Cifar    = sinew::Input<3, 32, 32>;                            // CIFAR-10's shape
using ResNet50 = sinew::nets::ResNet50<Cifar, 10, sinew::nets::ImageNetStem>;  // 23.5M, as bench/zoo measures it
using LeNet5   = sinew::nets::LeNet5<Cifar, 10>;                     // --quick: the same loop, seconds not minutes
using Backend  = sinew::backend::OneDnn;                             // oneDNN primitives
using Optim    = sinew::optim::Sgd;                                  // momentum SGD
using Loader   = sinew::data::ByteLoader;                            // uint8 in memory: 3 KiB per image

struct Settings {
  std::string net = "resnet50", config = "allreduce-sync";
  int batch = 128, threads = 1, warmup = 3, steps = 10;
};

/// `steps` batches of random CIFAR-shaped images and labels, the same on every rank.
sinew::data::Dataset generated(int steps, int batch) {
  sinew::data::Dataset d;
  d.channels = 3, d.height = 32, d.width = 32, d.num_classes = 10;
  const std::size_t n = std::size_t(steps) * std::size_t(batch);
  sinew::Rng rng(7);
  d.pixels.resize(n * d.image_size());
  for (auto& p : d.pixels) p = std::uint8_t(rng.below(256));
  for (std::size_t i = 0; i < n; ++i) d.labels.push_back(std::int32_t(rng.below(10)));
  return d;
}

template <class Net, class Strategy, class Mode>
int run(const Settings& s) {
  using Train = sinew::Trainer<Net, Backend, Strategy, Mode, Optim, Loader>;
  scaling::Mpi world;
  Train trainer({.threads = s.threads, .warmup_steps = 0}, {.lr = 0.01f, .momentum = 0.9f},
                Strategy({.configuration = "scaling " + s.net + " batch " + std::to_string(s.batch)}, world));
  // Each worker its own generated epoch (world_size 1): no rank holds the others' images.
  sinew::data::LoaderOptions lo;
  lo.batch_size = s.batch;
  lo.drop_last = true;
  Loader warm(generated(s.warmup, s.batch), lo);
  Loader timed(generated(s.steps, s.batch), lo);
  if (s.warmup > 0) trainer.train_epoch(warm);
  MPI_Barrier(world.native());
  const sinew::EpochStats e = trainer.train_epoch(timed);

  const bool worker = trainer.dist().is_worker();
  const double steps = worker && e.steps ? double(e.steps) : 1.0;
  const double mine[7] = {worker ? double(e.samples) : 0.0,     worker ? e.phases.load / steps : 0.0,
                          worker ? e.phases.forward / steps : 0.0, worker ? e.phases.backward / steps : 0.0,
                          worker ? e.phases.comm / steps : 0.0,    worker ? e.phases.comm_hidden / steps : 0.0,
                          worker ? e.phases.update / steps : 0.0};
  const double seconds = worker ? e.seconds : 0.0;
  double sum[7], slowest = 0;
  MPI_Reduce(mine, sum, 7, MPI_DOUBLE, MPI_SUM, 0, world.native());
  MPI_Reduce(&seconds, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, world.native());
  if (world.rank() == 0) {
    const int workers = trainer.dist().workers();
    const auto print = [](const char* key, double v) { std::printf("result %s %.9g\n", key, v); };
    print("images_per_second", slowest > 0 ? sum[0] / slowest : 0.0);
    print("workers", workers);
    print("ranks", world.size());
    print("threads_per_rank", trainer.context().threads());
    print("seconds", slowest);
    const char* keys[] = {"load", "forward", "backward", "comm_exposed", "comm_hidden", "update"};
    for (int i = 0; i < 6; ++i) print(keys[i], sum[1 + i] / workers);
    std::printf("info %s, %s, %d ranks (%d workers) x %d threads, local batch %d\n", s.net.c_str(),
                scaling::describe(s.config).c_str(), world.size(), workers, trainer.context().threads(), s.batch);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) try {
  Settings s;
  CLI::App app{"Training images/s of one distribution configuration on generated CIFAR-10-shaped images.\n"
               "Under mpirun: with a parameter server the last rank serves. bench/paper/scaling.py runs it.",
               "scaling_images_per_second"};
  app.add_option("--config", s.config, "strategy and sync mode")
      ->capture_default_str()
      ->check(CLI::IsMember(scaling::kConfigs));
  app.add_option("--net", s.net, "resnet50 (ImageNet stem at 32x32, the paper's net) or lenet5 (quick)")
      ->capture_default_str()
      ->check(CLI::IsMember({"resnet50", "lenet5"}));
  app.add_option("--batch", s.batch, "batch size of each worker")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--warmup", s.warmup, "untimed steps first")->capture_default_str()->check(CLI::NonNegativeNumber);
  app.add_option("--steps", s.steps, "timed steps")->capture_default_str()->check(CLI::PositiveNumber);
  sinew::cli::add_threads(app, s.threads, "compute threads of each rank");
  sinew::cli::parse(app, argc, argv);
  return scaling::with_config(s.config, [&]<class Strategy, class Mode>() {
    return s.net == "lenet5" ? run<LeNet5, Strategy, Mode>(s) : run<ResNet50, Strategy, Mode>(s);
  });
} catch (const std::exception& e) {
  std::fprintf(stderr, "scaling_images_per_second: %s\n", e.what());
  return 1;
}
