// train_image_folder: your own residual network on a folder of images, checkpointed every epoch, resumable,
// its weights written for PyTorch at the end. The guide's tasks in one program, written from README.md and
// docs/guide.md alone (and run by the test suite: examples/test_train_image_folder.py).
//
//   train_image_folder DIR [--epochs 4] [--batch 32] [--lr 0.1] [--momentum 0.9] [--weight-decay 5e-4]
//                          [--workers 2] [--threads N] [--seed 0] [--checkpoint-dir D] [--resume]
//                          [--stop-after-epoch K] [--weights FILE] [--logits FILE] [--json FILE]
//
// DIR holds train/ and val/, each in torchvision's ImageFolder layout (DIR/train/<class>/<image>.png or .jpg;
// the same class folders in both). Every image is resized to 16x16 (ImageFolderOptions::height/width); the
// training batches are augmented (random crop with 2 pixels of padding, horizontal flip) and streamed from
// the files by --workers threads (StreamingLoader). SGD with momentum, one epoch of linear warm-up and then a
// cosine decay to 0 over --epochs; the held-out accuracy after every epoch; a progress line within each.
// --checkpoint-dir D saves the run into D after every epoch and --resume continues it (with the same --epochs,
// which sets the schedule); --stop-after-epoch K ends the run after epoch K's checkpoint, as a run killed
// there, so that the test can resume it. At the end the weights go to --weights as safetensors under PyTorch's
// state_dict names (examples/test_train_image_folder.py writes the same network in PyTorch and loads them), and
// --logits FILE writes 8 held-out images as the network takes them, with its logits, for comparing with PyTorch.
#include <algorithm>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <functional>
#include <iostream>
#include <span>
#include <string>
#include <vector>

#include "cli/cli.hpp"
#include "sinew/sinew.hpp"

using namespace sinew;

constexpr int kClasses = 4;  // one output per class folder: change it for your data
constexpr int kSide = 16;    // every image is resized to kSide x kSide

// A basic block as torchvision's: conv-bn-relu-conv-bn, plus the input (a strided 1x1 projection where the shape
// changes), then ReLU. Named layers give PyTorch's keys: layer2.0.conv1.weight, layer2.0.downsample.0.weight ...
template <int C, int Stride = 1>
using Block = Module<"", Residual<Chain<Named<"conv1", Conv2d<C, 3, Stride, 1, false>>, Named<"bn1", BatchNorm2d>,
                                        ReLU, Named<"conv2", Conv2d<C, 3, 1, 1, false>>, Named<"bn2", BatchNorm2d>>,
                                  ProjectIfNeeded<C, Stride>>,
                     ReLU>;

using Net      = Sequential<Input<3, kSide, kSide>,
                            Named<"conv1", Conv2d<16, 3, 1, 1, false>>, Named<"bn1", BatchNorm2d>, ReLU,  // 16x16x16
                            Module<"layer1", Block<16>>,                                                   // 16x16x16
                            Module<"layer2", Block<32, 2>>,                                                // 32x8x8
                            GlobalAvgPool, Flatten, Named<"fc", Dense<kClasses>>>;
using Backend  = backend::OneDnn;                              // oneDNN primitives, PyTorch style
using Strategy = dist::Local;                                  // one process
using Loader   = data::StreamingLoader<data::ImageFolder>;     // read from the files by worker threads
using Train    = Trainer<Net, Backend, Strategy, Sync, optim::Sgd, Loader>;

struct Settings {
  std::string dir, checkpoint_dir, weights = "train_image_folder.safetensors", logits, json;
  int epochs = 4, batch = 32, workers = 2, threads = 0, stop_after_epoch = 0;
  double lr = 0.1, momentum = 0.9, weight_decay = 5e-4;  // as given: the optimizer holds them as floats
  std::uint64_t seed = 0;
  bool resume = false;
};

// ImageNet's statistics, as torchvision's examples normalise any folder of photographs.
data::LoaderOptions loader_options(const Settings& s, bool training) {
  return {.batch_size = s.batch, .shuffle = training, .seed = s.seed,
          .mean = {0.485f, 0.456f, 0.406f}, .std = {0.229f, 0.224f, 0.225f},
          .random_crop_padding = training ? 2 : 0, .random_horizontal_flip = training};
}

Loader image_folder(const Settings& s, const char* split, bool training) {
  data::ImageFolder folder(std::filesystem::path(s.dir) / split, {.height = kSide, .width = kSide});
  if (folder.num_classes() != kClasses)
    throw error((std::filesystem::path(s.dir) / split).string() + " holds " +
                std::to_string(folder.num_classes()) + " class folders; this program is built for " +
                std::to_string(kClasses) + " (change kClasses in train_image_folder.cpp)");
  return Loader(std::move(folder), loader_options(s, training), {.workers = s.workers});
}

// `count` images spread over `loader`'s epoch 0 (every size/count-th: each class, in a folder sorted by class), as
// the network takes them, and the network's logits for them in evaluation mode (as PyTorch's model.eval()).
metrics::Json some_logits(Train& trainer, Loader& loader, int count) {
  constexpr std::size_t kImage = Net::input_shape::kSize;
  const std::size_t stride = std::max<std::size_t>(1, loader.size() / std::size_t(count));
  std::vector<float> batch(std::size_t(loader.batch_size()) * kImage), images;
  std::vector<std::int32_t> batch_labels(std::size_t(loader.batch_size())), labels;
  loader.start_epoch(0);
  for (std::size_t first = 0, n = 0; labels.size() < std::size_t(count); first += n) {
    n = loader.next(batch, batch_labels);
    if (n == 0) break;
    for (std::size_t i = (first + stride - 1) / stride * stride; i < first + n && labels.size() < std::size_t(count);
         i += stride) {
      const auto image = std::span<const float>(batch).subspan((i - first) * kImage, kImage);
      images.insert(images.end(), image.begin(), image.end());
      labels.push_back(batch_labels[i - first]);
    }
  }
  auto& model = trainer.model();
  model.set_training(false);
  const std::span<const float> logits = model.forward(images, int(labels.size()));
  auto j = metrics::Json::object();
  j["shape"] = {3, kSide, kSide};
  j["images"] = metrics::Json::array();
  j["labels"] = labels;
  j["logits"] = metrics::Json::array();
  for (std::size_t i = 0; i < labels.size(); ++i) {
    j["images"].push_back(std::vector<float>(images.begin() + std::ptrdiff_t(i * kImage),
                                             images.begin() + std::ptrdiff_t((i + 1) * kImage)));
    const auto row = logits.subspan(i * kClasses, kClasses);
    j["logits"].push_back(std::vector<float>(row.begin(), row.end()));
  }
  model.set_training(true);
  return j;
}

int run(const Settings& s) {
  Loader train = image_folder(s, "train", true);
  Loader val = image_folder(s, "val", false);
  for (int c = 0; c < kClasses; ++c)  // classes are numbered by their folders' names: both splits need the same
    if (train.source().class_name(c) != val.source().class_name(c))
      throw error("class " + std::to_string(c) + " is " + train.source().class_name(c) +
                  " in train/ but " + val.source().class_name(c) + " in val/ (give both the same class folders)");
  Train trainer({.threads = s.threads, .seed = s.seed},
                {.lr = float(s.lr), .momentum = float(s.momentum), .weight_decay = float(s.weight_decay)});
  const auto steps_per_epoch = std::int64_t(train.batches_per_epoch());
  trainer.set_schedule(optim::WarmupCosine{.warmup = steps_per_epoch, .total = steps_per_epoch * s.epochs});
  std::printf("%zu parameters; %zu training images (augmented, %d workers), %zu held out; threads %d, batch %d\n",
              Net::kParams, train.size(), s.workers, val.size(), trainer.context().threads(), s.batch);

  // A live line on a terminal; under ctest, a pipe or mpirun, plain lines (none in epochs shorter than 10 s).
  metrics::Progress progress(std::cout, {.terminal = metrics::is_terminal(stdout), .epochs = s.epochs});
  trainer.add_step_callback(std::ref(progress));

  if (s.resume) {
    const std::string note = trainer.resume(s.checkpoint_dir);  // empty: the run continues exactly as saved
    std::printf("resumed from %s after epoch %d of %d\n", s.checkpoint_dir.c_str(), trainer.epochs_done(),
                s.epochs);
    if (!note.empty()) std::printf("%s\n", note.c_str());
  }
  auto j = metrics::Json::object();
  j["program"] = "train_image_folder";
  j["per_epoch"] = metrics::Json::array();
  for (int epoch = trainer.epochs_done(); epoch < s.epochs; ++epoch) {
    const EpochStats t = trainer.train_epoch(train);
    const EvalStats v = trainer.evaluate(val);
    std::printf("epoch %d/%d  loss %.4f  train %5.1f%%  held-out %5.1f%%  %.0f img/s\n", t.epoch + 1, s.epochs,
                t.loss, 100 * t.accuracy, 100 * v.accuracy, t.images_per_second);
    std::fflush(stdout);
    if (!s.checkpoint_dir.empty()) trainer.save_checkpoint(s.checkpoint_dir);  // complete, or the previous one
    auto e = metrics::Json::object();
    e["epoch"] = t.epoch + 1;
    e["train_loss"] = t.loss;
    e["train_accuracy"] = t.accuracy;
    e["test_loss"] = v.loss;
    e["test_accuracy"] = v.accuracy;
    j["per_epoch"].push_back(std::move(e));
    if (epoch + 1 == s.stop_after_epoch && epoch + 1 < s.epochs) {
      std::printf("stopped after epoch %d: continue with --resume\n", epoch + 1);
      j["stopped_after_epoch"] = epoch + 1;
      if (!s.json.empty()) metrics::save_json(j, s.json);
      return 0;
    }
  }
  io::save_safetensors(trainer.model(), s.weights);
  std::printf("weights: %s (PyTorch: load_state_dict(strict=True))\n", s.weights.c_str());
  if (!s.logits.empty()) metrics::save_json(some_logits(trainer, val, 8), s.logits);
  if (!s.json.empty()) {
    const metrics::Json last = j["per_epoch"].back();
    j["train_loss"] = last["train_loss"];
    j["test_accuracy"] = last["test_accuracy"];
    metrics::save_json(j, s.json);
  }
  return 0;
}

int main(int argc, char** argv) try {
  Settings s;
  CLI::App app{"Your own residual network on a folder of images: DIR/train/<class>/... trains, DIR/val/<class>/...\n"
               "is held out. Checkpoints every epoch, resumes, writes its weights for PyTorch.",
               "train_image_folder"};
  app.add_option("DIR", s.dir, "holds train/ and val/, one sub-folder per class in each")
      ->required()
      ->check(CLI::ExistingDirectory);
  app.add_option("--epochs", s.epochs, "epochs in all (with --resume, counting the saved ones)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--batch", s.batch, "batch size")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--lr", s.lr, "peak learning rate (after one epoch of warm-up; cosine decay to 0)")
      ->capture_default_str();
  app.add_option("--momentum", s.momentum, "SGD momentum")->capture_default_str();
  app.add_option("--weight-decay", s.weight_decay, "SGD weight decay")->capture_default_str();
  app.add_option("--workers", s.workers, "threads reading the images (0: the training thread reads)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  sinew::cli::add_threads(app, s.threads, "compute threads (0: OMP_NUM_THREADS or every core)");
  app.add_option("--seed", s.seed, "initialisation, shuffling and augmentation")->capture_default_str();
  auto* dir = app.add_option("--checkpoint-dir", s.checkpoint_dir, "save the run here after every epoch")
                  ->option_text("D");
  app.add_flag("--resume", s.resume, "continue the run saved in --checkpoint-dir")->needs(dir);
  app.add_option("--stop-after-epoch", s.stop_after_epoch,
                 "end after this epoch's checkpoint, as a run killed there (to test --resume)")
      ->check(CLI::PositiveNumber)
      ->needs(dir);
  app.add_option("--weights", s.weights, "safetensors file written at the end")->capture_default_str();
  app.add_option("--logits", s.logits, "write 8 held-out images (spread over the folder) and their logits as JSON")
      ->option_text("FILE");
  sinew::cli::add_json(app, s.json);
  sinew::cli::parse(app, argc, argv);
  return run(s);
} catch (const std::exception& e) {
  std::fprintf(stderr, "train_image_folder: %s\n", e.what());
  return 1;
}
