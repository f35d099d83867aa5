// train_lenet5: LeNet-5 on Fashion-MNIST (Debian's dataset-fashion-mnist), one progress line per epoch.
//
//   train_lenet5 [--data DIR] [--epochs 5] [--batch 64] [--lr 0.05] [--momentum 0.9] [--threads N]
//                [--seed 0] [--loader cached|bytes|streaming] [--workers 2] [--json FILE]
//                [--checkpoint-dir D] [--checkpoint-every 1] [--resume] [--quiet] [--progress-every 10]
//                [--trace FILE]
//
// (train_lenet5 --help lists them.) Within an epoch a progress line shows steps, images/s, loss and ETA: live
// on a terminal, every --progress-every seconds elsewhere, none with --quiet.
//
// --checkpoint-dir D saves the run into D every --checkpoint-every epochs and after the last; --resume continues
// the run saved there, up to --epochs epochs in all (sinew/io/checkpoint.hpp). SIGTERM or SIGUSR1 then saves the
// run there after the current step and exits with status 75 (a preemption: docs/checkpoints.md).
//
// --trace FILE writes every training step as a Chrome trace (sinew/metrics/timeline.hpp; Perfetto opens it).
//
// --loader picks how the data is held (sinew/data/loader_spec.hpp): decoded floats, uint8 bytes in memory, or
// read from the IDX files every epoch by --workers threads.
#include <cstdio>
#include <exception>
#include <vector>

#include "cli/cli.hpp"
#include "sinew/sinew.hpp"
#include "support/checkpoints.hpp"
#include "support/report.hpp"
#include "support/trace.hpp"

using Net      = sinew::nets::LeNet5<sinew::Input<1, 32, 32>>;  // 61,706 parameters
using Backend  = sinew::backend::OneDnn;                        // oneDNN primitives, PyTorch style
using Strategy = sinew::dist::Local;                            // one process
using Optim    = sinew::optim::Sgd;                             // momentum SGD
using Loader   = sinew::data::AnyLoader;                        // cached, bytes or streaming, chosen at run time

Loader make_loader(const std::string& kind, int workers, sinew::data::Split split, const std::string& dir,
                   const sinew::data::LoaderOptions& lo) {
  namespace data = sinew::data;
  if (kind == "streaming")
    return Loader::make<data::StreamingLoader<data::IdxRecords>>(
        "streaming, " + std::to_string(workers) + " workers", data::fashion_mnist_records(split, dir), lo,
        data::StreamingOptions{.workers = workers});
  if (kind == "bytes") return Loader::make<data::ByteLoader>("bytes", data::load_fashion_mnist(split, dir), lo);
  return Loader::make<data::CachedLoader>("cached", data::load_fashion_mnist(split, dir), lo);
}

/// The command line, as parsed.
struct Settings {
  std::string dir = sinew::data::default_fashion_mnist_dir().string();
  std::string loader = "cached";
  int epochs = 5, batch = 64, threads = 0, workers = 2;
  std::uint64_t seed = 0;
  double lr = 0.05, momentum = 0.9;
  std::string json;
  sinew::examples::Checkpoints checkpoints;
  sinew::examples::ProgressSettings progress;
  sinew::examples::Trace trace;
};

int run(const Settings& s) {
  using Train = sinew::Trainer<Net, Backend, Strategy, sinew::Sync, Optim, Loader>;
  sinew::data::LoaderOptions lo;
  lo.batch_size = s.batch;
  lo.seed = s.seed;
  lo.pad_to_height = lo.pad_to_width = 32;  // 28x28 -> 32x32, as LeNet-5 expects
  lo.mean = {0.2860f};                      // Fashion-MNIST training-set statistics
  lo.std = {0.3530f};
  const sinew::TrainerOptions to{.threads = s.threads, .seed = lo.seed};
  const Optim::options oo{.lr = float(s.lr), .momentum = float(s.momentum)};

  Loader train = make_loader(s.loader, s.workers, sinew::data::Split::train, s.dir, lo);
  lo.shuffle = false;
  Loader test = make_loader(s.loader, s.workers, sinew::data::Split::test, s.dir, lo);
  Train trainer(to, oo);
  std::printf("LeNet-5 on Fashion-MNIST (%zu train, %zu test images), %s loader, %s backend, %d threads, batch %d\n",
              train.size(), test.size(), train.name().c_str(), std::string(Backend::kName).c_str(),
              trainer.context().threads(), lo.batch_size);

  const auto progress = s.progress.attach(trainer, true, s.epochs);
  std::vector<sinew::examples::EpochRecord> records;
  s.trace.start(trainer, std::size_t(s.epochs) * train.batches_per_epoch());
  for (int e = s.checkpoints.start(trainer, true); e < s.epochs; ++e) {
    sinew::examples::EpochRecord r;
    r.train = trainer.train_epoch(train);
    r.test = trainer.evaluate(test);
    sinew::examples::print_epoch(r, s.epochs);
    records.push_back(r);
    s.checkpoints.after_epoch(trainer, e, s.epochs);
  }
  s.trace.write(trainer, true);
  if (!s.json.empty()) {
    auto config = sinew::metrics::Json::object();
    config["net"] = "lenet5";
    config["dataset"] = "fashion-mnist";
    config["loader"] = train.name();
    config["backend"] = Backend::kName;
    config["threads"] = trainer.context().threads();
    config["batch"] = lo.batch_size;
    config["lr"] = s.lr;
    config["momentum"] = s.momentum;
    const auto results = sinew::examples::results_json("train_lenet5", config, records, trainer.images_per_second());
    sinew::metrics::save_json(results, s.json);
  }
  return 0;
}

int main(int argc, char** argv) try {
  Settings s;
  CLI::App app{"LeNet-5 on Fashion-MNIST (Debian's dataset-fashion-mnist), one line per epoch", "train_lenet5"};
  app.add_option("--data", s.dir, "the Fashion-MNIST IDX files")->option_text("DIR")->capture_default_str();
  app.add_option("--epochs", s.epochs, "epochs in all (with --resume, counting the saved ones)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--batch", s.batch, "batch size")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--lr", s.lr, "learning rate")->capture_default_str();
  app.add_option("--momentum", s.momentum, "SGD momentum")->capture_default_str();
  sinew::cli::add_threads(app, s.threads, "compute threads (0: OMP_NUM_THREADS or every core)");
  app.add_option("--seed", s.seed, "initialisation and shuffling")->capture_default_str();
  app.add_option("--loader", s.loader, "decoded floats, uint8 bytes in memory, or read from the files every epoch")
      ->capture_default_str()
      ->check(CLI::IsMember({"cached", "bytes", "streaming"}));
  app.add_option("--workers", s.workers, "reader threads of the streaming loader (0: the trainer's thread reads)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  sinew::cli::add_json(app, s.json);
  s.checkpoints.add_options(app);
  s.progress.add_options(app);
  s.trace.add_options(app);
  sinew::cli::parse(app, argc, argv);
  return run(s);
} catch (const sinew::preempted& p) {  // a preemption signal: the run is saved in --checkpoint-dir
  std::fprintf(stderr, "train_lenet5: %s\n", p.what());
  return p.exit_status();  // 75: run it again with --resume
} catch (const std::exception& e) {
  std::fprintf(stderr, "train_lenet5: %s\n", e.what());
  return 1;
}
