// bench/loaders: training images/s and peak memory of each of sinew's loaders on real CIFAR-10, next to
// PyTorch's DataLoader over the same binary records with the same transforms, in the same run.
//
//   loaders [--data DIR] [--net lenet5,resnet18] [--loader cached,bytes,streaming] [--workers 0,1,2]
//           [--files 5] [--batches 200] [--batch 64] [--threads 2] [--no-pytorch] [--json FILE]
//
// DIR is the cifar-10-batches-bin directory (default $SINEW_CIFAR10_DIR, else ../shared/data/...); --files 5
// trains on data_batch_1..5 (50000 images). Each configuration is one process (this program started again with
// --child, or /usr/bin/python3 bench/pytorch/loaders.py), so its peak RSS is that of one net and one loader:
// the differences between loaders of one net are the loaders' memory. A configuration trains --batches batches
// of --batch images (the first 10 untimed) with random crop (padding 4) and horizontal flip, normalized, SGD
// with momentum, --threads compute threads. The streaming loader and DataLoader use 0, 1 and 2 workers
// (--workers); "waited" is the time the steps waited for their batches, summed over all --batches steps, the
// first included (the paper's loading phase), "hidden" the loader's work done while the steps computed
// (sinew's streaming loader only).
//
// ResNet-18 is torchvision's resnet18(num_classes=10) (7x7/2 stem) on 32x32 images, as the paper runs it.
//
//   loaders --shards DIR [--workers 1,2] [--batch 64] [--batches 200] [--no-pytorch] [--json FILE]
//
// measures loading alone, no network: StreamingLoader over the WebDataset tar shards in DIR (TarShards:
// RandomResizedCrop to 224, flip, normalized) next to PyTorch's DataLoader over the same tars with the same
// transforms (bench/pytorch/shards.py: an IterableDataset with tarfile and PIL), one pass (at most --batches
// batches, the first 2 untimed), images/s, images/s per core (per worker; 0 workers is one core) and peak RSS
// (DataLoader: the main process's and the largest worker's). bench/make_shards.py writes such shards from
// CIFAR-10, upscaled to 256x256 JPEGs.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "cli/cli.hpp"
#include "sinew/sinew.hpp"
#include "support/child.hpp"

namespace {

namespace data = sinew::data;
using Cifar    = sinew::Input<3, 32, 32>;
using LeNet5   = sinew::nets::LeNet5<Cifar>;                                      // 62,006 parameters
using ResNet18 = sinew::nets::ResNet18<Cifar, 10, sinew::nets::ImageNetStem>;     // torchvision's resnet18
using Backend  = sinew::backend::OneDnn;                                          // PyTorch style
using Strategy = sinew::dist::Local;                                              // one process
using Optim    = sinew::optim::Sgd;                                               // momentum 0.9

/// The first `limit` batches of an epoch of `inner`: a timed run of a fixed number of steps.
class FirstBatches {
 public:
  FirstBatches(data::AnyLoader inner, std::size_t limit) : inner_(std::move(inner)), limit_(limit) {}
  int channels() const { return inner_.channels(); }
  int height() const { return inner_.height(); }
  int width() const { return inner_.width(); }
  std::size_t batches_per_epoch() const { return std::min(limit_, inner_.batches_per_epoch()); }
  std::size_t size() const { return batches_per_epoch() * static_cast<std::size_t>(batch_size()); }
  int batch_size() const { return inner_.batch_size(); }
  void start_epoch(int epoch) {
    inner_.start_epoch(epoch);
    given_ = 0;
  }
  std::size_t next(std::span<float> images, std::span<std::int32_t> labels) {
    if (given_ == batches_per_epoch()) return 0;
    ++given_;
    return inner_.next(images, labels);
  }
  const data::AnyLoader& inner() const { return inner_; }

 private:
  data::AnyLoader inner_;
  std::size_t limit_, given_ = 0;
};

std::vector<std::filesystem::path> training_files(const std::string& dir, int files) {
  std::vector<std::filesystem::path> paths;
  for (int i = 1; i <= files; ++i) paths.push_back(std::filesystem::path(dir) / ("data_batch_" + std::to_string(i) + ".bin"));
  return paths;
}

struct ChildConfig {
  std::string dir, net, loader;
  int workers = 0, files = 5, batches = 200, batch = 64, threads = 2;
};

// A child's "result KEY VALUE", 0 where it printed none.
double result(const sinew::bench::ChildOutput& out, const char* key) {
  const auto it = out.results.find(key);
  return it == out.results.end() ? 0.0 : it->second;
}

// One pass over tar shards, loading only (see the top of this file).
int measure_shards(const std::string& dir, int workers, int batch, int batches) {
  data::StreamingLoader loader(
      data::TarShards(dir, {.num_classes = 10, .image = {.random_resized_crop = true, .seed = 1}}),
      {.batch_size = batch, .seed = 1, .drop_last = true, .mean = {0.485f, 0.456f, 0.406f},
       .std = {0.229f, 0.224f, 0.225f}, .random_horizontal_flip = true},
      {.workers = workers});
  std::vector<float> images(std::size_t(batch) * std::size_t(loader.channels() * loader.height() * loader.width()));
  std::vector<std::int32_t> labels(static_cast<std::size_t>(batch));
  loader.start_epoch(0);
  constexpr int kWarmup = 2;
  std::size_t timed = 0;
  sinew::metrics::Stopwatch watch;
  for (int b = 0; b < batches; ++b) {
    const std::size_t n = loader.next(images, labels);
    if (n == 0) break;
    if (b + 1 == kWarmup) watch.lap();
    if (b + 1 > kWarmup) timed += n;
  }
  const double seconds = watch.elapsed();
  std::printf("result images_per_second %.6g\n", seconds > 0 ? double(timed) / seconds : 0.0);
  std::printf("result peak_rss_bytes %.0f\n", double(sinew::metrics::peak_rss_bytes()));
  return 0;
}

// `--shards DIR`: sinew's streaming loader and DataLoader over the same shards, each worker count in its own
// process.
int compare_shards(const std::string& dir, const std::vector<int>& workers, int batch, int batches, bool pytorch,
                   const std::string& json) {
  const std::string common = " --shards " + dir + " --batch " + std::to_string(batch);
  auto results = sinew::metrics::Json::array();
  fmt::print("tar shards in {}: RandomResizedCrop 224 + flip, batch {}, loading only\n", dir, batch);
  fmt::print("{:<28} {:>10} {:>14} {:>12} {:>16}\n", "loader", "images/s", "images/s/core", "peak RSS MB",
             "worker RSS MB");
  std::vector<std::pair<std::string, std::string>> runs;  // label, command
  for (const int w : workers) {
    runs.push_back({fmt::format("sinew streaming, {} workers", w),
                    "/proc/" + std::to_string(getpid()) + "/exe --child --workers " + std::to_string(w) +
                        " --batches " + std::to_string(batches) + common});
    if (pytorch)
      runs.push_back({fmt::format("DataLoader, {} workers", w),
                      "/usr/bin/python3 " SINEW_SOURCE_DIR "/bench/pytorch/shards.py --workers " + std::to_string(w) +
                          " --batches " + std::to_string(batches) + common});
  }
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const auto& [label, command] = runs[i];
    const int w = workers[i / (pytorch ? 2 : 1)];
    const auto out = sinew::bench::run_child(command);
    auto r = sinew::metrics::Json::object();
    r["loader"] = label;
    r["workers"] = w;
    if (!out.failure.empty()) {
      fmt::print("{:<28}  failed: {}\n", label, out.failure);
      r["failure"] = out.failure;
    } else {
      const auto get = [&](const char* key) { return result(out, key); };
      const double per_core = get("images_per_second") / std::max(w, 1);
      fmt::print("{:<28} {:>10.0f} {:>14.0f} {:>12.0f} {:>16.0f}\n", label, get("images_per_second"), per_core,
                 get("peak_rss_bytes") / 1e6, get("worker_peak_rss_bytes") / 1e6);
      r["images_per_second_per_core"] = per_core;
      for (const char* key : {"images_per_second", "peak_rss_bytes", "worker_peak_rss_bytes"})
        if (out.results.count(key)) r[key] = get(key);
    }
    std::fflush(stdout);
    results.push_back(std::move(r));
  }
  if (!json.empty()) {
    auto j = sinew::metrics::Json::object();
    j["program"] = "bench/loaders --shards";
    j["shards"] = dir;
    j["batch"] = batch;
    j["results"] = std::move(results);
    sinew::metrics::save_json(j, json);
  }
  return 0;
}

template <class Net>
int measure(const ChildConfig& c) {
  data::LoaderOptions lo;
  lo.batch_size = c.batch;
  lo.mean = {0.4914f, 0.4822f, 0.4465f};
  lo.std = {0.2470f, 0.2435f, 0.2616f};
  lo.random_crop_padding = 4;
  lo.random_horizontal_flip = true;
  lo.drop_last = true;
  const auto files = training_files(c.dir, c.files);
  data::AnyLoader any = [&] {
    if (c.loader == "streaming")
      return data::AnyLoader::make<data::StreamingLoader<data::CifarRecords>>(
          "streaming", data::CifarRecords::cifar10(files), lo, data::StreamingOptions{.workers = c.workers});
    if (c.loader == "bytes") return data::AnyLoader::make<data::ByteLoader>("bytes", data::read_cifar10(files), lo);
    return data::AnyLoader::make<data::CachedLoader>("cached", data::read_cifar10(files), lo);
  }();
  FirstBatches loader(std::move(any), static_cast<std::size_t>(c.batches));
  sinew::Trainer<Net, Backend, Strategy, sinew::Sync, Optim, FirstBatches> trainer(
      {.threads = c.threads, .warmup_steps = 10}, {.lr = 0.01f, .momentum = 0.9f});
  const auto stats = trainer.train_epoch(loader);
  const auto times = loader.inner().times();
  std::printf("result images_per_second %.6g\n", stats.images_per_second);
  std::printf("result waited %.6g\n", stats.phases.load);
  std::printf("result hidden %.6g\n", times.hidden());
  std::printf("result peak_rss_bytes %.0f\n", double(sinew::metrics::peak_rss_bytes()));
  return 0;
}

int child(const ChildConfig& c) {
  if (c.net == "lenet5") return measure<LeNet5>(c);
  return measure<ResNet18>(c);
}

std::string default_data_dir() {
  if (const char* dir = std::getenv("SINEW_CIFAR10_DIR"); dir != nullptr && *dir != '\0') return dir;
  return SINEW_SOURCE_DIR "/../shared/data/cifar-10-batches-bin";
}

}  // namespace

int main(int argc, char** argv) try {
  std::string dir = default_data_dir(), json, shards;
  std::vector<std::string> nets{"lenet5", "resnet18"}, loaders{"cached", "bytes", "streaming"};
  std::vector<int> workers{0, 1, 2};
  int files = 5, batches = 200, batch = 64, threads = 2;
  bool child_mode = false, no_pytorch = false;
  CLI::App app{"Training images/s, time waited for data and peak memory of each loader on real CIFAR-10, next to "
               "PyTorch's DataLoader in the same run",
               "loaders"};
  app.add_option("--data", dir, "the cifar-10-batches-bin directory ($SINEW_CIFAR10_DIR)")->capture_default_str();
  app.add_option("--net", nets, "networks, comma-separated")
      ->delimiter(',')
      ->capture_default_str()
      ->check(CLI::IsMember({"lenet5", "resnet18"}));
  app.add_option("--loader", loaders, "loaders, comma-separated")
      ->delimiter(',')
      ->capture_default_str()
      ->check(CLI::IsMember({"cached", "bytes", "streaming"}));
  auto* workers_option =
      app.add_option("--workers", workers, "worker counts of the streaming loader and DataLoader, comma-separated")
      ->delimiter(',')
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--files", files, "data_batch_1.bin .. data_batch_N.bin")
      ->capture_default_str()
      ->check(CLI::Range(1, 5));
  app.add_option("--batches", batches, "batches trained (the first 10 untimed)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--batch", batch, "batch size")->capture_default_str()->check(CLI::PositiveNumber);
  sinew::cli::add_threads(app, threads);
  app.add_flag("--no-pytorch", no_pytorch, "skip PyTorch's DataLoader");
  sinew::cli::add_json(app, json);
  app.add_option("--shards", shards, "measure loading alone over the tar shards in this folder (see --help's top)");
  app.add_flag("--child", child_mode)->group("");  // one measurement: this program started again by itself
  sinew::cli::parse(app, argc, argv);
  if (!shards.empty()) {
    if (child_mode)
      return measure_shards(shards, workers_option->count() ? sinew::cli::single(app, workers, "--workers") : 0, batch,
                            batches);
    return compare_shards(shards, workers, batch, batches, !no_pytorch, json);
  }
  if (!std::filesystem::exists(std::filesystem::path(dir) / "data_batch_1.bin"))
    sinew::cli::fail(app, dir + " holds no data_batch_1.bin: give --data, the cifar-10-batches-bin directory");
  if (child_mode)
    return child({dir, sinew::cli::single(app, nets, "--net"), sinew::cli::single(app, loaders, "--loader"),
                  workers_option->count() ? sinew::cli::single(app, workers, "--workers") : 0, files, batches, batch,
                  threads});
  const bool pytorch = !no_pytorch;

  const std::string common = " --data " + dir + " --files " + std::to_string(files) + " --batches " +
                             std::to_string(batches) + " --batch " + std::to_string(batch) + " --threads " +
                             std::to_string(threads);
  auto results = sinew::metrics::Json::array();
  fmt::print("CIFAR-10, {} images, batch {}, {} compute threads, {} steps, random crop + flip\n", files * 10000,
              batch, threads, batches);
  fmt::print("{:<9} {:<26} {:>10} {:>10} {:>10} {:>12}\n", "net", "loader", "images/s", "waited s", "hidden s",
             "peak RSS MB");
  for (const auto& net : nets) {
    std::vector<std::pair<std::string, std::string>> runs;  // label, command
    for (const auto& l : loaders) {
      if (l == "streaming") {
        for (const int w : workers)
          runs.push_back({fmt::format("sinew streaming, {} workers", w), "/proc/" + std::to_string(getpid()) +
                                                                     "/exe --child --net " + net +
                                                                     " --loader streaming --workers " +
                                                                     std::to_string(w) + common});
      } else {
        runs.push_back({"sinew " + l, "/proc/" + std::to_string(getpid()) + "/exe --child --net " + net +
                                          " --loader " + l + common});
      }
    }
    if (pytorch)
      for (const int w : workers)
        runs.push_back({fmt::format("DataLoader, {} workers", w),
                        "/usr/bin/python3 " SINEW_SOURCE_DIR "/bench/pytorch/loaders.py --net " + net +
                            " --workers " + std::to_string(w) + common});
    for (const auto& [label, command] : runs) {
      const auto out = sinew::bench::run_child(command);
      auto r = sinew::metrics::Json::object();
      r["net"] = net;
      r["loader"] = label;
      if (!out.failure.empty()) {
        fmt::print("{:<9} {:<26}  failed: {}\n", net, label, out.failure);
        r["failure"] = out.failure;
      } else {
        const auto get = [&](const char* key) { return result(out, key); };
        fmt::print("{:<9} {:<26} {:>10.0f} {:>10.3f} {:>10.3f} {:>12.0f}\n", net, label, get("images_per_second"),
                    get("waited"), get("hidden"), get("peak_rss_bytes") / 1e6);
        for (const char* key : {"images_per_second", "waited", "hidden", "peak_rss_bytes", "worker_peak_rss_bytes"})
          if (out.results.count(key)) r[key] = get(key);
      }
      std::fflush(stdout);
      results.push_back(std::move(r));
    }
  }
  if (!json.empty()) {
    auto j = sinew::metrics::Json::object();
    j["program"] = "bench/loaders";
    j["images"] = files * 10000;
    j["batch"] = batch;
    j["threads"] = threads;
    j["batches"] = batches;
    j["results"] = std::move(results);
    sinew::metrics::save_json(j, json);
  }
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "loaders: %s\n", e.what());
  return 1;
}
