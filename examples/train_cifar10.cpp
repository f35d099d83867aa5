// train_cifar10: a zoo network on the CIFAR-10 or CIFAR-100 binary files in DIR.
//
//   train_cifar10 DIR [--net lenet5] [--dataset cifar10|cifar100] [--labels fine|coarse]
//                     [--loader cached|bytes|streaming] [--workers 2] [--prefetch 2]
//                     [--precision f32|bf16] [--epochs 10] [--batch 64] [--lr 0.02] [--momentum 0.9]
//                     [--weight-decay 0] [--cosine] [--augment] [--threads N] [--seed 0] [--json FILE]
//                     [--checkpoint-dir D] [--checkpoint-every 1] [--resume] [--quiet] [--progress-every 10]
//                     [--trace FILE]
//
// CIFAR-10 (cifar-10-batches-bin): data_batch_1..4.bin train, data_batch_5.bin is held out for validation.
// CIFAR-100 (cifar-100-binary): train.bin trains, test.bin is held out; --labels picks the 100 fine classes or
// the 20 coarse superclasses.
// --net picks one of the networks below (each is its own compiled Trainer); alexnet runs on the images resized
// to 64x64 (bilinear, as torchvision's Resize). --augment turns on the usual CIFAR augmentation (random crop
// with 4-pixel padding per 32 pixels of side, horizontal flip) for the training batches only; --cosine decays
// the learning rate to zero over the run after one epoch of linear warm-up. --loader picks how the data is held
// (sinew/data/loader_spec.hpp): cached (decoded floats), bytes (uint8 in memory) or streaming (read from the
// files every epoch by --workers threads, --prefetch batches ahead). --checkpoint-dir D saves the run into D
// every --checkpoint-every epochs and after the last; --resume continues the run saved there, up to --epochs
// epochs in all (sinew/io/checkpoint.hpp); with --cosine, resume with the same --epochs, which sets the schedule.
// SIGTERM or SIGUSR1 then saves the run into D after the current step and exits 75 (docs/checkpoints.md).
// --trace FILE writes every training step as a Chrome trace (sinew/metrics/timeline.hpp; Perfetto opens it).
// --precision bf16 trains on backend::OneDnnBf16 (bf16 convolutions and inner products, f32 master weights;
// a CPU without AVX512_BF16 or AMX refuses), for lenet5 and resnet18_cifar on CIFAR-10: the same seed and epochs
// with f32 and bf16 compare their held-out accuracy (issue 18's parity check).
#include <cstdio>
#include <exception>
#include <filesystem>
#include <string>
#include <vector>

#include "cli/cli.hpp"
#include "sinew/sinew.hpp"
#include "support/checkpoints.hpp"
#include "support/report.hpp"
#include "support/trace.hpp"

namespace nets = sinew::nets;
using Cifar   = sinew::Input<3, 32, 32>;
using Cifar64 = sinew::Input<3, 64, 64>;  // resized, for AlexNet (the paper's Table III)

template <int Classes> using LeNet5        = nets::LeNet5<Cifar, Classes>;              // tanh + average pooling
template <int Classes> using ResNet18Cifar = nets::ResNet18<Cifar, Classes, nets::CifarStem>;  // 3x3 stem: 11.2M
template <int Classes> using ResNet18      = nets::ResNet18<Cifar, Classes, nets::ImageNetStem>;  // 7x7/2 + pool
template <int Classes> using ResNet50      = nets::ResNet50<Cifar, Classes, nets::ImageNetStem>;  // 23.5M
template <int Classes> using VGG16BN       = nets::VGG16BN<Cifar, Classes>;             // 134.3M
template <int Classes> using AlexNet       = nets::AlexNet<Cifar64, Classes>;           // 57.0M at 10 classes
template <int Classes> using MobileNetV2   = nets::MobileNetV2<Cifar, Classes>;         // 2.2M, depthwise + ReLU6
template <int Classes> using ResNeXt50     = nets::ResNeXt50_32x4d<Cifar, Classes>;     // 23.0M, 32 groups
using Backend  = sinew::backend::OneDnn;                       // oneDNN primitives, PyTorch style
using Bf16     = sinew::backend::OneDnnBf16;                   // --precision bf16
using Strategy = sinew::dist::Local;                           // one process
using Optim    = sinew::optim::Sgd;                            // momentum SGD with weight decay
using Loader   = sinew::data::AnyLoader;                       // cached, bytes or streaming, chosen at run time

struct Settings {
  std::string net = "lenet5", precision = "f32", dir, dataset = "cifar10", labels = "fine", loader_kind = "cached";
  int epochs = 10;
  double lr = 0.02, momentum = 0.9, weight_decay = 0;  // as given: the optimizer holds them as floats
  bool cosine = false, augment = false;
  sinew::data::LoaderOptions loader;
  sinew::data::StreamingOptions streaming;
  sinew::TrainerOptions trainer;
  Optim::options optimizer;
  std::string json;
  sinew::examples::Checkpoints checkpoints;
  sinew::examples::ProgressSettings progress;
  sinew::examples::Trace trace;

  bool cifar100() const { return dataset == "cifar100"; }
  std::vector<std::filesystem::path> files(bool train) const {
    std::vector<std::filesystem::path> paths;
    if (cifar100())
      paths.push_back(std::filesystem::path(dir) / (train ? "train.bin" : "test.bin"));
    else if (train)
      for (const char* name : {"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin", "data_batch_4.bin"})
        paths.push_back(std::filesystem::path(dir) / name);
    else
      paths.push_back(std::filesystem::path(dir) / "data_batch_5.bin");
    return paths;
  }
  std::string describe() const {
    return cifar100() ? "cifar-100 (" + labels + " labels; train: train.bin, test: test.bin)"
                      : "cifar-10 (train: batches 1-4, test: batch 5)";
  }
};

sinew::data::AnyLoader make_loader(const Settings& s, bool train, const sinew::data::LoaderOptions& lo) {
  namespace data = sinew::data;
  const auto files = s.files(train);
  const auto label = s.labels == "coarse" ? data::Cifar100Label::coarse : data::Cifar100Label::fine;
  if (s.loader_kind == "streaming") {
    auto records = s.cifar100() ? data::CifarRecords::cifar100(files, label) : data::CifarRecords::cifar10(files);
    return data::AnyLoader::make<data::StreamingLoader<data::CifarRecords>>(
        "streaming, " + std::to_string(s.streaming.workers) + " workers", std::move(records), lo, s.streaming);
  }
  data::Dataset d = s.cifar100() ? data::read_cifar100(files, label) : data::read_cifar10(files);
  if (s.loader_kind == "bytes") return data::AnyLoader::make<data::ByteLoader>("bytes", std::move(d), lo);
  return data::AnyLoader::make<data::CachedLoader>("cached", d, lo);
}

template <class Net, class B = Backend>
int train(const Settings& s) {
  using Train = sinew::Trainer<Net, B, Strategy, sinew::Sync, Optim, Loader>;
  constexpr int kSide = Net::input_shape::kHeight;
  sinew::data::LoaderOptions lo = s.loader;
  if (kSide != 32) lo.resize_to_height = lo.resize_to_width = kSide;
  const sinew::data::LoaderOptions held_out_options = [&] {
    auto o = lo;
    o.shuffle = false;
    return o;
  }();
  if (s.augment) lo.random_crop_padding = 4 * kSide / 32, lo.random_horizontal_flip = true;
  Loader train = make_loader(s, true, lo);
  Loader held_out = make_loader(s, false, held_out_options);
  Train trainer(s.trainer, s.optimizer);
  if (s.cosine) {
    const auto steps_per_epoch = std::int64_t(train.batches_per_epoch());
    trainer.set_schedule(sinew::optim::WarmupCosine{.warmup = steps_per_epoch, .total = steps_per_epoch * s.epochs});
  }
  std::printf("%s (%zu parameters) on %s at %dx%d (%zu train, %zu held-out images%s), %s loader, %s backend, "
              "%d threads, batch %d\n",
              s.net.c_str(), Net::kParams, s.describe().c_str(), kSide, kSide, train.size(), held_out.size(),
              s.augment ? ", augmented" : "", train.name().c_str(), std::string(B::kName).c_str(),
              trainer.context().threads(), s.loader.batch_size);

  const auto progress = s.progress.attach(trainer, true, s.epochs);
  std::vector<sinew::examples::EpochRecord> records;
  auto loader_epochs = sinew::metrics::Json::array();
  s.trace.start(trainer, std::size_t(s.epochs) * train.batches_per_epoch());
  for (int e = s.checkpoints.start(trainer, true); e < s.epochs; ++e) {
    sinew::examples::EpochRecord r;
    r.train = trainer.train_epoch(train);
    const auto times = train.times();
    r.test = trainer.evaluate(held_out);
    sinew::examples::print_epoch(r, s.epochs);
    records.push_back(r);
    s.checkpoints.after_epoch(trainer, e, s.epochs);
    auto t = sinew::metrics::Json::object();
    t["waited"] = times.waited;
    t["hidden"] = times.hidden();
    loader_epochs.push_back(std::move(t));
  }
  s.trace.write(trainer, true);
  if (!s.json.empty()) {
    auto config = sinew::metrics::Json::object();
    config["net"] = s.net;
    config["dataset"] = s.describe();
    config["image_size"] = kSide;
    config["loader"] = train.name();
    config["augmentation"] = s.augment ? "random crop (padding " + std::to_string(4 * kSide / 32) +
                                             ") + horizontal flip"
                                       : std::string("none");
    config["backend"] = B::kName;
    config["precision"] = s.precision;
    config["threads"] = trainer.context().threads();
    config["batch"] = s.loader.batch_size;
    config["lr"] = s.lr;
    config["schedule"] = s.cosine ? "warmup 1 epoch + cosine" : "constant";
    config["momentum"] = s.momentum;
    config["weight_decay"] = s.weight_decay;
    auto j = sinew::examples::results_json("train_cifar10", config, records, trainer.images_per_second());
    // Per epoch, the streaming loader's own split of its time (zeros for the in-memory loaders, whose waiting
    // is phases.load); peak_rss_bytes above is the whole process's, loader included.
    j["loader_seconds"] = std::move(loader_epochs);
    sinew::metrics::save_json(j, s.json);
  }
  return 0;
}

template <int Classes>
int train_net(const std::string& net, const Settings& s) {
  if constexpr (Classes == 10) {  // bf16: the two nets of the accuracy-parity check, each its own build
    if (s.precision == "bf16" && net == "lenet5") return train<LeNet5<Classes>, Bf16>(s);
    if (s.precision == "bf16" && net == "resnet18_cifar") return train<ResNet18Cifar<Classes>, Bf16>(s);
  }
  if (s.precision == "bf16") return -2;
  if (net == "lenet5") return train<LeNet5<Classes>>(s);
  if (net == "resnet18_cifar") return train<ResNet18Cifar<Classes>>(s);
  if (net == "alexnet") return train<AlexNet<Classes>>(s);
  if constexpr (Classes == 10) {  // the others on CIFAR-10 only: each net and class count is its own build
    if (net == "resnet18") return train<ResNet18<Classes>>(s);
    if (net == "resnet50") return train<ResNet50<Classes>>(s);
    if (net == "vgg16_bn") return train<VGG16BN<Classes>>(s);
    if (net == "mobilenet_v2") return train<MobileNetV2<Classes>>(s);
    if (net == "resnext50_32x4d") return train<ResNeXt50<Classes>>(s);
  }
  return -1;
}

int main(int argc, char** argv) try {
  Settings s;
  CLI::App app{"A zoo network on the CIFAR-10 or CIFAR-100 binary files in DIR.\n"
               "CIFAR-10: DIR holds data_batch_1.bin .. data_batch_5.bin (binary version); batches 1-4 train,\n"
               "batch 5 is held out for validation. CIFAR-100: DIR holds train.bin and test.bin (binary version).",
               "train_cifar10"};
  app.add_option("DIR", s.dir, "the directory of the CIFAR binary files")->required()->check(CLI::ExistingDirectory);
  app.add_option("--net", s.net,
                 "on CIFAR-10 also resnet18, resnet50, vgg16_bn, mobilenet_v2, resnext50_32x4d; alexnet runs at 64x64")
      ->capture_default_str()
      ->check(CLI::IsMember({"lenet5", "resnet18_cifar", "alexnet", "resnet18", "resnet50", "vgg16_bn", "mobilenet_v2",
                             "resnext50_32x4d"}));
  app.add_option("--dataset", s.dataset)->capture_default_str()->check(CLI::IsMember({"cifar10", "cifar100"}));
  app.add_option("--labels", s.labels, "CIFAR-100's 100 fine classes or 20 coarse superclasses")
      ->capture_default_str()
      ->check(CLI::IsMember({"fine", "coarse"}));
  app.add_option("--loader", s.loader_kind, "decoded floats, uint8 bytes in memory, or read from the files every epoch")
      ->capture_default_str()
      ->check(CLI::IsMember({"cached", "bytes", "streaming"}));
  app.add_option("--workers", s.streaming.workers,
                 "reader threads of the streaming loader (0: the trainer's thread reads)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--prefetch", s.streaming.prefetch_batches, "batches the streaming loader reads ahead")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--precision", s.precision,
                 "bf16: backend::OneDnnBf16 (bf16 convolutions and inner products, f32 master weights), for lenet5 "
                 "and resnet18_cifar on CIFAR-10")
      ->capture_default_str()
      ->check(CLI::IsMember({"f32", "bf16"}));
  app.add_option("--epochs", s.epochs, "epochs in all (with --resume, counting the saved ones)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--batch", s.loader.batch_size, "batch size")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--lr", s.lr, "learning rate")->capture_default_str();
  app.add_option("--momentum", s.momentum, "SGD momentum")->capture_default_str();
  app.add_option("--weight-decay", s.weight_decay, "SGD weight decay")->capture_default_str();
  app.add_flag("--cosine", s.cosine, "one epoch of linear warm-up, then cosine decay to 0 over the run");
  app.add_flag("--augment", s.augment, "random crop (4-pixel padding per 32 pixels) and horizontal flip");
  sinew::cli::add_threads(app, s.trainer.threads, "compute threads (0: OMP_NUM_THREADS or every core)");
  app.add_option("--seed", s.loader.seed, "initialisation and shuffling")->capture_default_str();
  sinew::cli::add_json(app, s.json);
  s.checkpoints.add_options(app);
  s.progress.add_options(app);
  s.trace.add_options(app);
  sinew::cli::parse(app, argc, argv);
  if (s.cifar100()) {
    s.loader.mean = {0.5071f, 0.4865f, 0.4409f};  // CIFAR-100 training-set statistics
    s.loader.std = {0.2673f, 0.2564f, 0.2762f};
  } else {
    s.loader.mean = {0.4914f, 0.4822f, 0.4465f};  // CIFAR-10 training-set statistics
    s.loader.std = {0.2470f, 0.2435f, 0.2616f};
  }
  s.trainer.seed = s.loader.seed;
  s.optimizer = {.lr = float(s.lr), .momentum = float(s.momentum), .weight_decay = float(s.weight_decay)};

  const int classes = !s.cifar100() ? 10 : s.labels == "fine" ? 100 : 20;
  const int status = classes == 10    ? train_net<10>(s.net, s)
                     : classes == 100 ? train_net<100>(s.net, s)
                                      : train_net<20>(s.net, s);
  if (status >= 0) return status;
  if (status == -2)
    sinew::cli::fail(app, "--precision bf16 runs --net lenet5 or resnet18_cifar on CIFAR-10 (not --net " + s.net +
                              (s.cifar100() ? " on CIFAR-100" : "") + "); use --precision f32 for it");
  sinew::cli::fail(app, "--net " + s.net + " runs on CIFAR-10 only: on CIFAR-100, lenet5, resnet18_cifar or alexnet");
} catch (const sinew::preempted& p) {  // a preemption signal: the run is saved in --checkpoint-dir
  std::fprintf(stderr, "train_cifar10: %s\n", p.what());
  return p.exit_status();  // 75: run it again with --resume
} catch (const std::exception& e) {
  std::fprintf(stderr, "train_cifar10: %s\n", e.what());
  return 1;
}
