// bench/scaling/time_to_accuracy: held-out accuracy against training wall time of one distribution
// configuration on CIFAR-10, one run under mpirun; bench/paper/time_to_accuracy.py runs every configuration
// (the usability paper's section 4.7) and draws the figure.
//
//   mpirun -np R build/bench/scaling/scaling_time_to_accuracy --data DIR
//          --config allreduce-sync|ps-sync|ps-async|ps-stale2 [--net lenet5|resnet18] [--batch 42] [--lr 0.05]
//          [--momentum 0.9] [--budget 600] [--max-epochs 30] [--eval-images 0] [--threads 1] [--seed 0]
//          [--held-out test_batch.bin|data_batch_5.bin]
//
// DIR holds CIFAR-10's binary files: --held-out (test_batch.bin) is held out, the data_batch_N.bin files but
// it train (each worker a disjoint shard, reshuffled every epoch). After every epoch rank 0 (a worker with
// every configuration) evaluates the held-out images and prints a "point {json}" line: epoch, training seconds
// so far, held-out accuracy and loss, training loss. Training seconds are rank 0's wall time inside
// train_epoch, so the evaluations are left out (the other workers wait for rank 0 at the next epoch's start,
// within no timed interval), and a point at 0 s gives the untrained accuracy. The run stops after the epoch in
// which the training seconds pass --budget, or after --max-epochs.
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <string>
#include <vector>

#include "cli/cli.hpp"
#include "configs.hpp"

namespace {

namespace scaling = sinew::bench::scaling;
namespace data    = sinew::data;
using Cifar    = sinew::Input<3, 32, 32>;                                        // CIFAR-10
using LeNet5   = sinew::nets::LeNet5<Cifar, 10>;                                 // 62K parameters, tanh
using ResNet18 = sinew::nets::ResNet18<Cifar, 10, sinew::nets::CifarStem>;       // 3x3 stem, 11.2M
using Backend  = sinew::backend::OneDnn;                                         // oneDNN primitives
using Optim    = sinew::optim::Sgd;                                              // momentum SGD
using Loader   = data::ByteLoader;                                               // uint8 in memory

struct Settings {
  std::string net = "lenet5", config = "allreduce-sync", dir, held_out = "test_batch.bin";
  int batch = 42, threads = 1, max_epochs = 30, eval_images = 0;
  double lr = 0.05, momentum = 0.9, budget = 600;
  std::uint64_t seed = 0;
};

// The training files: every data_batch_N.bin but the held-out one.
std::vector<std::filesystem::path> train_files(const Settings& s) {
  std::vector<std::filesystem::path> paths;
  for (const char* name : {"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin", "data_batch_4.bin",
                           "data_batch_5.bin"})
    if (name != s.held_out) paths.push_back(std::filesystem::path(s.dir) / name);
  return paths;
}

template <class Net, class Strategy, class Mode>
int run(const Settings& s) {
  using Train = sinew::Trainer<Net, Backend, Strategy, Mode, Optim, Loader>;
  scaling::Mpi world;
  Train trainer({.threads = s.threads, .seed = s.seed},
                {.lr = float(s.lr), .momentum = float(s.momentum)},
                Strategy({.configuration = "time_to_accuracy " + s.net + " batch " + std::to_string(s.batch)},
                         world));
  const int workers = trainer.dist().workers();
  data::LoaderOptions lo;
  lo.batch_size = s.batch;
  lo.seed = s.seed;
  lo.drop_last = true;  // every worker takes as many steps
  lo.mean = {0.4914f, 0.4822f, 0.4465f};  // CIFAR-10 training-set statistics
  lo.std = {0.2470f, 0.2435f, 0.2616f};
  lo.rank = trainer.dist().worker_index();  // a parameter server holds no data
  lo.world_size = workers;
  Loader train(data::read_cifar10(train_files(s)), lo);
  data::Dataset held = data::read_cifar10(std::filesystem::path(s.dir) / s.held_out);
  if (s.eval_images > 0 && std::size_t(s.eval_images) < held.size()) {  // the first N held-out images
    held.pixels.resize(std::size_t(s.eval_images) * held.image_size());
    held.labels.resize(std::size_t(s.eval_images));
  }
  lo.shuffle = false;
  lo.drop_last = false;
  lo.rank = 0, lo.world_size = 1;  // rank 0 evaluates every held-out image
  Loader test(std::move(held), lo);
  const bool root = world.rank() == 0;
  if (root)
    std::printf("info %s on CIFAR-10, %s, %d ranks (%d workers) x %d threads, local batch %d (global %d), "
                "%zu train / %zu held-out images, lr %g\n",
                s.net.c_str(), scaling::describe(s.config).c_str(), world.size(), workers,
                trainer.context().threads(), s.batch, s.batch * workers, train.size(), test.size(), s.lr);

  const auto point = [&](int epoch, double seconds, double train_loss) {
    const sinew::EvalStats t = trainer.evaluate(test);
    auto j = sinew::metrics::Json::object();
    j["epoch"] = epoch;
    j["seconds"] = seconds;
    j["accuracy"] = t.accuracy;
    j["loss"] = t.loss;
    j["train_loss"] = train_loss;
    j["eval_seconds"] = t.seconds;
    std::printf("point %s\n", j.dump().c_str());
    std::fflush(stdout);
  };
  if (root) point(0, 0.0, 0.0);
  double seconds = 0;
  for (int epoch = 1; epoch <= s.max_epochs; ++epoch) {
    sinew::metrics::Stopwatch watch;
    const sinew::EpochStats e = trainer.train_epoch(train);
    seconds += watch.elapsed();
    if (root) point(epoch, seconds, e.loss);
    // Rank 0's clock decides for every rank, the servers too, so that all stop after the same epoch.
    int stop = root && seconds >= s.budget ? 1 : 0;
    MPI_Bcast(&stop, 1, MPI_INT, 0, world.native());
    if (stop) break;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) try {
  Settings s;
  CLI::App app{"Held-out accuracy against training time of one distribution configuration on CIFAR-10.\n"
               "Under mpirun: with a parameter server the last rank serves. bench/paper/time_to_accuracy.py runs it.",
               "scaling_time_to_accuracy"};
  app.add_option("--data", s.dir, "CIFAR-10's binary files: data_batch_N.bin train, --held-out is held out")
      ->required()
      ->check(CLI::ExistingDirectory)
      ->option_text("DIR");
  app.add_option("--held-out", s.held_out, "the file in DIR held out for evaluation (the others train)")
      ->capture_default_str()
      ->check(CLI::IsMember({"test_batch.bin", "data_batch_5.bin"}));
  app.add_option("--config", s.config, "strategy and sync mode")
      ->capture_default_str()
      ->check(CLI::IsMember([] {
        std::vector<std::string> all = scaling::kConfigs;
        all.insert(all.end(), scaling::kCompressedConfigs.begin(), scaling::kCompressedConfigs.end());
        return all;
      }()));
  app.add_option("--net", s.net, "LeNet-5 or ResNet-18 (CIFAR stem)")
      ->capture_default_str()
      ->check(CLI::IsMember({"lenet5", "resnet18"}));
  app.add_option("--batch", s.batch, "batch size of each worker")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--lr", s.lr, "learning rate")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--momentum", s.momentum, "SGD momentum")->capture_default_str()->check(CLI::Range(0.0, 1.0));
  app.add_option("--budget", s.budget, "training seconds after which the run stops at the epoch's end")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--max-epochs", s.max_epochs, "epochs at most")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--eval-images", s.eval_images, "held-out images evaluated (the first N; 0: all)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  sinew::cli::add_threads(app, s.threads, "compute threads of each rank");
  app.add_option("--seed", s.seed, "initialisation and shuffling")->capture_default_str();
  sinew::cli::parse(app, argc, argv);
  if (std::find(scaling::kCompressedConfigs.begin(), scaling::kCompressedConfigs.end(), s.config) !=
      scaling::kCompressedConfigs.end()) {
    if (s.net != "lenet5") sinew::cli::fail(app, "--config " + s.config + " runs with --net lenet5 only");
    return scaling::with_compressed_config(s.config, [&]<class Strategy, class Mode>() {
      return run<LeNet5, Strategy, Mode>(s);
    });
  }
  return scaling::with_config(s.config, [&]<class Strategy, class Mode>() {
    return s.net == "resnet18" ? run<ResNet18, Strategy, Mode>(s) : run<LeNet5, Strategy, Mode>(s);
  });
} catch (const std::exception& e) {
  std::fprintf(stderr, "scaling_time_to_accuracy: %s\n", e.what());
  return 1;
}
