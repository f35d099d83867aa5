// train_cifar10: a zoo network on the CIFAR-10 binary files in DIR, holding out data_batch_5.bin for validation.
//
//   train_cifar10 DIR [--net lenet5] [--epochs 10] [--batch 64] [--lr 0.02] [--momentum 0.9]
//                     [--weight-decay 0] [--cosine] [--augment] [--threads N] [--seed 0] [--json FILE]
//
// --net picks one of the networks below (each is its own compiled Trainer); --augment turns on the usual
// CIFAR augmentation (random crop with 4-pixel padding, horizontal flip) for the training batches only;
// --cosine decays the learning rate to zero over the run after one epoch of linear warm-up.
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "sinew/sinew.hpp"
#include "support/cli.hpp"
#include "support/report.hpp"

namespace nets = sinew::nets;
using Cifar = sinew::Input<3, 32, 32>;

using LeNet5        = nets::LeNet5<Cifar>;                          // 62,006 parameters, tanh + average pooling
using ResNet18Cifar = nets::ResNet18<Cifar, 10, nets::CifarStem>;   // 3x3 stem, no max-pool: 11.2M, 0.56 GFLOP
using ResNet18      = nets::ResNet18<Cifar, 10, nets::ImageNetStem>;  // 7x7/2 stem + max-pool: 11.2M
using ResNet50      = nets::ResNet50<Cifar, 10, nets::ImageNetStem>;  // bottleneck blocks: 23.5M
using VGG16BN       = nets::VGG16BN<Cifar, 10>;                     // 134.3M, mostly the classifier
using Backend       = sinew::backend::OneDnn;                       // oneDNN primitives, PyTorch style
using Strategy      = sinew::dist::Local;                           // one process
using Optim         = sinew::optim::Sgd;                            // momentum SGD with weight decay

struct Settings {
  std::string net, dir;
  int epochs = 10;
  bool cosine = false, augment = false;
  sinew::data::LoaderOptions loader;
  sinew::TrainerOptions trainer;
  Optim::options optimizer;
  std::string json;
};

template <class Net>
int train(const Settings& s) {
  using Train = sinew::Trainer<Net, Backend, Strategy, sinew::Sync, Optim>;
  sinew::data::LoaderOptions lo = s.loader;
  if (s.augment) lo.random_crop_padding = 4, lo.random_horizontal_flip = true;
  sinew::data::CachedLoader train(sinew::data::load_cifar10(
                                         s.dir, {"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin",
                                                 "data_batch_4.bin"}), lo);
  lo = s.loader;
  lo.shuffle = false;
  sinew::data::CachedLoader held_out(sinew::data::load_cifar10(s.dir, {"data_batch_5.bin"}), lo);
  Train trainer(s.trainer, s.optimizer);
  if (s.cosine) {
    const auto steps_per_epoch = std::int64_t(train.batches_per_epoch());
    trainer.set_schedule(sinew::optim::WarmupCosine{.warmup = steps_per_epoch, .total = steps_per_epoch * s.epochs});
  }
  std::printf("%s (%zu parameters) on CIFAR-10 (%zu train, %zu held-out images%s), %s backend, %d threads, batch %d\n",
              s.net.c_str(), Net::kParams, train.size(), held_out.size(),
              s.augment ? ", augmented" : "", std::string(Backend::kName).c_str(), trainer.context().threads(),
              s.loader.batch_size);

  std::vector<sinew::examples::EpochRecord> records;
  for (int e = 0; e < s.epochs; ++e) {
    sinew::examples::EpochRecord r;
    r.train = trainer.train_epoch(train);
    r.test = trainer.evaluate(held_out);
    sinew::examples::print_epoch(r, s.epochs);
    records.push_back(r);
  }
  if (!s.json.empty()) {
    auto config = sinew::metrics::Json::make_object();
    config.set("net", s.net);
    config.set("dataset", "cifar-10 (train: batches 1-4, test: batch 5)");
    config.set("augmentation", s.augment ? "random crop (padding 4) + horizontal flip" : "none");
    config.set("backend", Backend::kName);
    config.set("threads", trainer.context().threads());
    config.set("batch", s.loader.batch_size);
    config.set("lr", s.optimizer.lr);
    config.set("schedule", s.cosine ? "warmup 1 epoch + cosine" : "constant");
    config.set("momentum", s.optimizer.momentum);
    config.set("weight_decay", s.optimizer.weight_decay);
    sinew::examples::results_json("train_cifar10", config, records, trainer.images_per_second()).save(s.json);
  }
  return 0;
}

int main(int argc, char** argv) try {
  sinew::cli::Args args(argc, argv,
                        "usage: train_cifar10 DIR [--net lenet5] [--epochs 10] [--batch 64] [--lr 0.02]\n"
                        "                         [--momentum 0.9] [--weight-decay 0] [--cosine] [--augment]\n"
                        "                         [--threads N] [--seed 0] [--json FILE]\n"
                        "DIR holds data_batch_1.bin .. data_batch_5.bin (CIFAR-10 binary version);\n"
                        "batches 1-4 train, batch 5 is held out for validation.\n"
                        "--net: lenet5, resnet18_cifar, resnet18, resnet50 or vgg16_bn.");
  if (args.positional().size() != 1) args.fail("give the directory of the CIFAR-10 binary files");
  Settings s;
  s.dir = args.positional()[0];
  s.net = args.get("net", "lenet5");
  s.epochs = args.integer("epochs", 10);
  s.cosine = args.flag("cosine");
  s.augment = args.flag("augment");
  s.loader.batch_size = args.integer("batch", 64);
  s.loader.seed = std::uint64_t(args.integer("seed", 0));
  s.loader.mean = {0.4914f, 0.4822f, 0.4465f};  // CIFAR-10 training-set statistics
  s.loader.std = {0.2470f, 0.2435f, 0.2616f};
  s.trainer = {.threads = args.integer("threads", 0), .seed = s.loader.seed};
  s.optimizer = {.lr = float(args.number("lr", 0.02)),
                 .momentum = float(args.number("momentum", 0.9)),
                 .weight_decay = float(args.number("weight-decay", 0))};
  s.json = args.get("json", "");
  args.check_unused();

  if (s.net == "lenet5") return train<LeNet5>(s);
  if (s.net == "resnet18_cifar") return train<ResNet18Cifar>(s);
  if (s.net == "resnet18") return train<ResNet18>(s);
  if (s.net == "resnet50") return train<ResNet50>(s);
  if (s.net == "vgg16_bn") return train<VGG16BN>(s);
  args.fail("--net " + s.net + " is not one of lenet5, resnet18_cifar, resnet18, resnet50, vgg16_bn");
} catch (const std::exception& e) {
  std::fprintf(stderr, "train_cifar10: %s\n", e.what());
  return 1;
}
