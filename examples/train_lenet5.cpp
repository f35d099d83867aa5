// train_lenet5: LeNet-5 on Fashion-MNIST (Debian's dataset-fashion-mnist), one progress line per epoch.
//
//   train_lenet5 [--data DIR] [--epochs 5] [--batch 64] [--lr 0.05] [--momentum 0.9] [--threads N]
//                [--seed 0] [--loader cached|bytes|streaming] [--workers 2] [--json FILE]
//                [--checkpoint-dir D] [--checkpoint-every 1] [--resume]
//
// --checkpoint-dir D saves the run into D every --checkpoint-every epochs and after the last; --resume continues
// the run saved there, up to --epochs epochs in all (sinew/io/checkpoint.hpp).
//
// --loader picks how the data is held (sinew/data/loader_spec.hpp): decoded floats, uint8 bytes in memory, or
// read from the IDX files every epoch by --workers threads.
#include <cstdio>
#include <exception>
#include <vector>

#include "sinew/sinew.hpp"
#include "support/checkpoints.hpp"
#include "support/cli.hpp"
#include "support/report.hpp"

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

int run(sinew::cli::Args& args, const std::string& kind) {
  using Train = sinew::Trainer<Net, Backend, Strategy, sinew::Sync, Optim, Loader>;
  const std::string dir = args.get("data", sinew::data::default_fashion_mnist_dir().string());
  const int epochs = args.integer("epochs", 5);
  sinew::data::LoaderOptions lo;
  lo.batch_size = args.integer("batch", 64);
  lo.seed = std::uint64_t(args.integer("seed", 0));
  lo.pad_to_height = lo.pad_to_width = 32;  // 28x28 -> 32x32, as LeNet-5 expects
  lo.mean = {0.2860f};                      // Fashion-MNIST training-set statistics
  lo.std = {0.3530f};
  const sinew::TrainerOptions to{.threads = args.integer("threads", 0), .seed = lo.seed};
  const Optim::options oo{.lr = float(args.number("lr", 0.05)), .momentum = float(args.number("momentum", 0.9))};
  const std::string json = args.get("json", "");
  const int workers = args.integer("workers", 2);
  const auto checkpoints = sinew::examples::Checkpoints::from(args);
  args.check_unused();

  Loader train = make_loader(kind, workers, sinew::data::Split::train, dir, lo);
  lo.shuffle = false;
  Loader test = make_loader(kind, workers, sinew::data::Split::test, dir, lo);
  Train trainer(to, oo);
  std::printf("LeNet-5 on Fashion-MNIST (%zu train, %zu test images), %s loader, %s backend, %d threads, batch %d\n",
              train.size(), test.size(), train.name().c_str(), std::string(Backend::kName).c_str(),
              trainer.context().threads(), lo.batch_size);

  std::vector<sinew::examples::EpochRecord> records;
  for (int e = checkpoints.start(trainer, true); e < epochs; ++e) {
    sinew::examples::EpochRecord r;
    r.train = trainer.train_epoch(train);
    r.test = trainer.evaluate(test);
    sinew::examples::print_epoch(r, epochs);
    records.push_back(r);
    checkpoints.after_epoch(trainer, e, epochs);
  }
  if (!json.empty()) {
    auto config = sinew::metrics::Json::object();
    config["net"] = "lenet5";
    config["dataset"] = "fashion-mnist";
    config["loader"] = train.name();
    config["backend"] = Backend::kName;
    config["threads"] = trainer.context().threads();
    config["batch"] = lo.batch_size;
    config["lr"] = oo.lr;
    config["momentum"] = oo.momentum;
    const auto results = sinew::examples::results_json("train_lenet5", config, records, trainer.images_per_second());
    sinew::metrics::save_json(results, json);
  }
  return 0;
}

int main(int argc, char** argv) try {
  sinew::cli::Args args(argc, argv,
                        "usage: train_lenet5 [--data DIR] [--epochs 5] [--batch 64] [--lr 0.05] [--momentum 0.9]\n"
                        "                    [--threads N] [--seed 0] [--loader cached|bytes|streaming]\n"
                        "                    [--workers 2] [--json FILE]\n"
                        "                    [--checkpoint-dir D] [--checkpoint-every 1 (epochs)] [--resume]");
  const std::string loader = args.get("loader", "cached");
  if (loader != "cached" && loader != "bytes" && loader != "streaming")
    args.fail("--loader must be cached, bytes or streaming, not '" + loader + "'");
  return run(args, loader);
} catch (const std::exception& e) {
  std::fprintf(stderr, "train_lenet5: %s\n", e.what());
  return 1;
}
