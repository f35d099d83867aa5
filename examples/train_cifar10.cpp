// train_cifar10: LeNet-5 on the CIFAR-10 binary files in DIR, holding out data_batch_5.bin for validation.
//
//   train_cifar10 DIR [--epochs 10] [--batch 64] [--lr 0.02] [--momentum 0.9] [--threads N] [--seed 0]
//                     [--json FILE]
#include <cstdio>
#include <exception>
#include <vector>

#include "sinew/sinew.hpp"
#include "support/cli.hpp"
#include "support/report.hpp"

using Net      = sinew::nets::LeNet5<sinew::Input<3, 32, 32>>;  // 62,006 parameters
using Backend  = sinew::backend::OneDnn;                        // oneDNN primitives, PyTorch style
using Strategy = sinew::dist::Local;                            // one process
using Optim    = sinew::optim::Sgd;                             // momentum SGD
using Train    = sinew::Trainer<Net, Backend, Strategy, sinew::Sync, Optim>;

int main(int argc, char** argv) try {
  sinew::cli::Args args(argc, argv,
                        "usage: train_cifar10 DIR [--epochs 10] [--batch 64] [--lr 0.02] [--momentum 0.9]\n"
                        "                         [--threads N] [--seed 0] [--json FILE]\n"
                        "DIR holds data_batch_1.bin .. data_batch_5.bin (CIFAR-10 binary version);\n"
                        "batches 1-4 train, batch 5 is held out for validation.");
  if (args.positional().size() != 1) args.fail("give the directory of the CIFAR-10 binary files");
  const std::string dir = args.positional()[0];
  const int epochs = args.integer("epochs", 10);
  sinew::data::LoaderOptions lo;
  lo.batch_size = args.integer("batch", 64);
  lo.seed = std::uint64_t(args.integer("seed", 0));
  lo.mean = {0.4914f, 0.4822f, 0.4465f};  // CIFAR-10 training-set statistics
  lo.std = {0.2470f, 0.2435f, 0.2616f};
  const sinew::TrainerOptions to{.threads = args.integer("threads", 0), .seed = lo.seed};
  const Optim::options oo{.lr = float(args.number("lr", 0.02)), .momentum = float(args.number("momentum", 0.9))};
  const std::string json = args.get("json", "");
  args.check_unused();

  sinew::data::CachedLoader train(
      sinew::data::load_cifar10(dir, {"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin", "data_batch_4.bin"}),
      lo);
  lo.shuffle = false;
  sinew::data::CachedLoader held_out(sinew::data::load_cifar10(dir, {"data_batch_5.bin"}), lo);
  Train trainer(to, oo);
  std::printf("LeNet-5 on CIFAR-10 (%zu train, %zu held-out images), %s backend, %d threads, batch %d\n",
              train.size(), held_out.size(), std::string(Backend::kName).c_str(), trainer.context().threads(),
              lo.batch_size);

  std::vector<sinew::examples::EpochRecord> records;
  for (int e = 0; e < epochs; ++e) {
    sinew::examples::EpochRecord r;
    r.train = trainer.train_epoch(train);
    r.test = trainer.evaluate(held_out);
    sinew::examples::print_epoch(r, epochs);
    records.push_back(r);
  }
  if (!json.empty()) {
    auto config = sinew::metrics::Json::make_object();
    config.set("net", "lenet5");
    config.set("dataset", "cifar-10 (train: batches 1-4, test: batch 5)");
    config.set("backend", Backend::kName);
    config.set("threads", trainer.context().threads());
    config.set("batch", lo.batch_size);
    config.set("lr", oo.lr);
    config.set("momentum", oo.momentum);
    sinew::examples::results_json("train_cifar10", config, records, trainer.images_per_second()).save(json);
  }
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "train_cifar10: %s\n", e.what());
  return 1;
}
