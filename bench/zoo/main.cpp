// bench/zoo: training images/s of the zoo's networks next to PyTorch (torchvision's same networks, same batch and
// thread count, best of NCHW and channels_last) in the same run, the peak resident memory of each side, and
// single-thread inference at batch 1 and 42.
//
//   zoo [--net alexnet,resnet18,resnet18_cifar,resnet50,vgg16_bn] [--batch 42,128] [--backend onednn,eigen]
//       [--threads 2] [--warmup 10] [--steps 10] [--no-inference] [--no-pytorch] [--profile] [--json FILE]
//
// Every configuration runs in a process of its own (this program started again with --child, and one
// /usr/bin/python3 bench/pytorch/zoo.py per configuration), so each peak RSS belongs to one network and batch.
// A timed training step is forward, softmax cross-entropy, backward and an SGD-with-momentum update on one
// fixed synthetic batch (see measure.hpp); dropout and batch norm are in training mode on both sides.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "support/anchor.hpp"
#include "support/child.hpp"
#include "support/cli.hpp"
#include "zoo/measure.hpp"

namespace sinew::bench::zoo {
int measure_onednn(const Config& c);
int measure_eigen(const Config& c);
}

namespace {

namespace zoo = sinew::bench::zoo;
using sinew::metrics::Json;

std::vector<std::string> split(const std::string& list) {
  std::vector<std::string> out;
  std::stringstream ss(list);
  for (std::string item; std::getline(ss, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

struct Measurement {
  std::map<std::string, double> values;  // images_per_second, peak_rss_bytes, ...
  std::vector<std::string> operators;    // "convolution 23.64 ms" with --profile
  std::string failure;
};

Measurement run_child(const std::string& command) {
  sinew::bench::ChildOutput c = sinew::bench::run_child(command);
  return {std::move(c.results), std::move(c.lines["operator"]), std::move(c.failure)};
}

std::string child_command(const zoo::Config& c, const std::string& backend) {
  return "/proc/" + std::to_string(getpid()) + "/exe --child --net " + c.net + " --backend " + backend +
         " --batch " + std::to_string(c.batch) + " --threads " + std::to_string(c.threads) + " --warmup " +
         std::to_string(c.warmup) + " --steps " + std::to_string(c.steps) + (c.inference ? " --inference" : "") +
         (c.profile ? " --profile" : "");
}

int child(sinew::cli::Args& args) {
  zoo::Config c;
  c.net = args.get("net", "");
  const std::string backend = args.get("backend", "onednn");
  c.batch = args.integer("batch", 42);
  c.threads = args.integer("threads", 2);
  c.warmup = args.integer("warmup", 10);
  c.steps = args.integer("steps", 10);
  c.inference = args.flag("inference");
  c.profile = args.flag("profile");
  args.check_unused();
  if (backend == "onednn") return zoo::measure_onednn(c);
  if (backend == "eigen") return zoo::measure_eigen(c);
  std::fprintf(stderr, "zoo: unknown backend %s (onednn or eigen)\n", backend.c_str());
  return 2;
}

}  // namespace

int main(int argc, char** argv) try {
  sinew::cli::Args args(
      argc, argv,
      "usage: zoo [--net alexnet,resnet18,resnet18_cifar,resnet50,vgg16_bn] [--batch 42,128] [--backend onednn,eigen]\n"
      "           [--threads 2] [--warmup 10] [--steps 10] [--no-inference] [--no-pytorch] [--profile]\n"
      "           [--json FILE]");
  if (args.flag("child")) return child(args);
  const auto nets = split(args.get("net", "alexnet,resnet18,resnet18_cifar,resnet50,vgg16_bn"));
  const auto backends = split(args.get("backend", "onednn"));
  std::vector<int> batches;
  for (const auto& b : split(args.get("batch", "42,128"))) batches.push_back(std::stoi(b));
  zoo::Config base;
  base.threads = args.integer("threads", 2);
  base.warmup = args.integer("warmup", 10);
  base.steps = args.integer("steps", 10);
  base.profile = args.flag("profile");
  const bool inference = !args.flag("no-inference"), pytorch = !args.flag("no-pytorch");
  const std::string json = args.get("json", "");
  args.check_unused();
  for (const auto& n : nets)
    if (std::find(zoo::net_names().begin(), zoo::net_names().end(), n) == zoo::net_names().end())
      args.fail("--net " + n + " is not one of alexnet, resnet18, resnet18_cifar, resnet50, vgg16_bn");

  // Training at each batch with the given threads; inference with one thread at batch 1 and 42.
  std::vector<zoo::Config> configs;
  for (const auto& n : nets) {
    for (int b : batches) {
      zoo::Config c = base;
      c.net = n, c.batch = b;
      configs.push_back(c);
    }
    if (inference)
      for (int b : {1, 42}) {
        zoo::Config c = base;
        c.net = n, c.batch = b, c.threads = 1, c.inference = true, c.profile = false;
        c.steps = b == 1 ? std::max(base.steps, 50) : base.steps;
        configs.push_back(c);
      }
  }

  std::printf("%-15s %-9s %6s %3s %-7s %10s %10s %6s %9s %9s\n", "net", "mode", "batch", "thr", "backend",
              "sinew/s", "torch/s", "ratio", "RSS MiB", "torch MiB");
  auto out = Json::array();
  for (const zoo::Config& c : configs) {
    Measurement torch;
    if (pytorch) {
      torch = run_child("/usr/bin/python3 " SINEW_SOURCE_DIR "/bench/pytorch/zoo.py --net " + c.net + " --batch " +
                        std::to_string(c.batch) + " --threads " + std::to_string(c.threads) + " --warmup " +
                        std::to_string(c.warmup) + " --steps " + std::to_string(c.steps) +
                        (c.inference ? " --inference" : ""));
      if (!torch.failure.empty()) std::fprintf(stderr, "zoo: PyTorch side of %s: %s\n", c.net.c_str(), torch.failure.c_str());
    }
    for (const auto& backend : backends) {
      const Measurement m = run_child(child_command(c, backend));
      if (!m.failure.empty()) {
        std::fprintf(stderr, "zoo: %s on %s failed: %s\n", c.net.c_str(), backend.c_str(), m.failure.c_str());
        continue;
      }
      const auto get = [](const Measurement& x, const char* k) {
        const auto it = x.values.find(k);
        return it == x.values.end() ? 0.0 : it->second;
      };
      const double ips = get(m, "images_per_second"), tips = get(torch, "images_per_second");
      const double ratio = tips > 0 ? ips / tips : 0;
      std::printf("%-15s %-9s %6d %3d %-7s %10.1f %10.1f %6.2f %9.0f %9.0f\n", c.net.c_str(),
                  c.inference ? "inference" : "train", c.batch, c.threads, backend.c_str(), ips, tips, ratio,
                  get(m, "peak_rss_bytes") / 1048576.0, get(torch, "peak_rss_bytes") / 1048576.0);
      for (const auto& op : m.operators) std::printf("    %s\n", op.c_str());
      std::fflush(stdout);
      auto j = Json::object();
      j["net"] = c.net;
      j["mode"] = c.inference ? "inference" : "train";
      j["batch"] = c.batch;
      j["threads"] = c.threads;
      j["backend"] = backend;
      j["parameters"] = get(m, "parameters");
      j["images_per_second"] = ips;
      j["pytorch_images_per_second"] = tips > 0 ? Json(tips) : Json();
      j["ratio"] = ratio > 0 ? Json(ratio) : Json();
      j["peak_rss_bytes"] = get(m, "peak_rss_bytes");
      j["pytorch_peak_rss_bytes"] = tips > 0 ? Json(get(torch, "peak_rss_bytes")) : Json();
      j["pytorch_images_per_second_nchw"] = tips > 0 ? Json(get(torch, "images_per_second_nchw")) : Json();
      j["pytorch_images_per_second_channels_last"] =
          tips > 0 ? Json(get(torch, "images_per_second_channels_last")) : Json();
      if (!m.operators.empty()) {
        auto ops = Json::array();
        for (const auto& op : m.operators) ops.push_back(op);
        j["top_operators"] = ops;
      }
      out.push_back(std::move(j));
    }
  }
  if (!json.empty()) sinew::metrics::save_json(out, json);
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "zoo: %s\n", e.what());
  return 1;
}
