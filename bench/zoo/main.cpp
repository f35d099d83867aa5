// bench/zoo: training images/s of the zoo's networks next to PyTorch (torchvision's same networks, same batch and
// thread count, best of NCHW and channels_last) in the same run, the peak resident memory of each side, and
// single-thread inference at batch 1 and 42. The two mixed backends (bench/zoo/mix.cpp, ResNet-18 only) show
// what the layout conversions between two backends cost: with --profile their "reorder" lines. --profile profiles
// the inference rows too (their evaluation-mode passes: metrics::OperatorProfile::Passes::evaluation).
//
//   zoo [--net alexnet,resnet18,resnet18_cifar,resnet50,vgg16_bn,mobilenet_v2,resnext50_32x4d] [--batch 42,128]
//       [--backend onednn,eigen,onednn+eigen_bn,eigen+onednn_conv] [--precision f32,bf16]
//       [--threads 2] [--warmup 10] [--steps 10] [--no-inference] [--no-training] [--no-pytorch] [--profile]
//       [--update-in-backward] [--json FILE]
//
// Every configuration runs in a process of its own (this program started again with --child, and one
// /usr/bin/python3 bench/pytorch/zoo.py per configuration), so each peak RSS belongs to one network and batch.
// A timed training step is forward, softmax cross-entropy, backward and an SGD-with-momentum update on one
// fixed synthetic batch (see measure.hpp); dropout and batch norm are in training mode on both sides.
// --precision bf16 runs the onednn backend as backend::OneDnnBf16 (the other backends have no bf16) and adds
// PyTorch under torch.autocast("cpu", dtype=torch.bfloat16) as a second anchor; ratios are to PyTorch f32.
// Every row shows sinew's GFLOP/s (6 x forward multiply-adds x images / s for training, 2 x for inference;
// sinew/metrics/flops.hpp; the multiply-adds sinew performs, fewer than the network's where a node folds layers
// together: VGG's first Dense on a 1x1 feature map, layers/detail/pooled_dense.hpp) and its share of the peak of its
// precision on its thread count, which a process of its own measures once per run with oneDNN's matmul
// (bench/support/peak.hpp), and the memory traffic a step implies (GB/s by sinew/metrics/traffic.hpp's count) as a
// share of the bandwidth STREAM's triad measures on the same threads (bench/support/bandwidth.hpp), the denominator
// for memory-bound nets. The JSON also has PyTorch's GFLOP/s and GB/s. The last column is a cache line's round
// trip between the first two CPUs before and after sinew's run (bench/support/core_latency.hpp), then PyTorch's:
// where the host placed the vCPUs, which moves training on 2 threads (bench/support/rounds_table.py sets apart the
// rounds whose two sides ran under different placements).
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "support/anchor.hpp"
#include "support/bandwidth.hpp"
#include "support/child.hpp"
#include "support/core_latency.hpp"
#include "support/peak.hpp"
#include "cli/cli.hpp"
#include "zoo/measure.hpp"

namespace sinew::bench::zoo {
int measure_onednn(const Config& c);
int measure_onednn_bf16(const Config& c);
int measure_eigen(const Config& c);
int measure_mix(const Config& c, const std::string& backend);
}

namespace {

namespace zoo = sinew::bench::zoo;
using sinew::metrics::Json;

struct Measurement {
  std::map<std::string, double> values;  // images_per_second, peak_rss_bytes, ...
  std::vector<std::string> operators;    // "convolution 23.64 ms" with --profile
  std::string failure;
  std::vector<std::string> info;         // bench/pytorch/zoo.py's "info torch VERSION, BLAS ..." and "info compile ..."
};

Measurement run_child(const std::string& command) {
  sinew::bench::ChildOutput c = sinew::bench::run_child(command);
  return {std::move(c.results), std::move(c.lines["operator"]), std::move(c.failure), std::move(c.lines["info"])};
}

/// The text after "info KEY " in a PyTorch child's output ("torch": its version and BLAS; "compile": how
/// torch.compile went and which candidate was best), or empty.
std::string info_of(const Measurement& m, const std::string& key) {
  for (const auto& line : m.info)
    if (line.rfind(key + " ", 0) == 0) return line.substr(key.size() + 1);
  return "";
}

std::string child_command(const zoo::Config& c, const std::string& backend, const std::string& precision) {
  return fmt::format(
      "/proc/{}/exe --child --net {} --backend {} --precision {} --batch {} --threads {} --warmup {} --steps {}{}{}{}",
      getpid(), c.net, backend, precision, c.batch, c.threads, c.warmup, c.steps, c.inference ? " --inference" : "",
      c.profile ? " --profile" : "", c.update_in_backward ? " --update-in-backward" : "");
}

int child(const zoo::Config& c, const std::string& backend, const std::string& precision) {
  if (precision == "bf16") {
    if (backend == "onednn") return zoo::measure_onednn_bf16(c);
    std::fprintf(stderr, "zoo: --precision bf16 is the onednn backend's (backend::OneDnnBf16); %s has no bf16\n",
                 backend.c_str());
    return 2;
  }
  if (backend == "onednn") return zoo::measure_onednn(c);
  if (backend == "eigen") return zoo::measure_eigen(c);
  return zoo::measure_mix(c, backend);
}

}  // namespace

int main(int argc, char** argv) try {
  std::vector<std::string> nets = zoo::net_names(), backends{"onednn"}, precisions{"f32"};
  std::vector<int> batches{42, 128};
  zoo::Config base;
  bool child_mode = false, no_inference = false, no_training = false, no_pytorch = false;
  std::string json;
  CLI::App app{"Training images/s of the zoo's networks next to torchvision's in the same run, peak memory of each "
               "side, single-thread inference at batch 1 and 42",
               "zoo"};
  app.add_option("--net", nets, "networks, comma-separated")
      ->delimiter(',')
      ->capture_default_str()
      ->check(CLI::IsMember(zoo::net_names()));
  app.add_option("--batch", batches, "batch sizes, comma-separated")
      ->delimiter(',')
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--backend", backends, "backends, comma-separated")
      ->delimiter(',')
      ->capture_default_str()
      ->check(CLI::IsMember({"onednn", "eigen", "onednn+eigen_bn", "eigen+onednn_conv"}));
  app.add_option("--precision", precisions,
                 "f32, bf16 (onednn as backend::OneDnnBf16, with PyTorch under bf16 autocast beside PyTorch f32), "
                 "comma-separated")
      ->delimiter(',')
      ->capture_default_str()
      ->check(CLI::IsMember({"f32", "bf16"}));
  sinew::cli::add_threads(app, base.threads);
  app.add_option("--warmup", base.warmup, "untimed steps first")->capture_default_str()->check(CLI::NonNegativeNumber);
  app.add_option("--steps", base.steps, "timed steps")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_flag("--no-inference", no_inference, "skip the single-thread inference runs");
  app.add_flag("--no-training", no_training, "skip the training runs (e.g. the Eigen backend's inference alone)");
  app.add_flag("--no-pytorch", no_pytorch, "skip torchvision");
  app.add_flag("--profile", base.profile,
               "print the top operator kinds and the eight slowest layers of a separately profiled run");
  app.add_flag("--update-in-backward", base.update_in_backward,
               "time sinew's step with dist::Local({.update_in_backward = true}) rather than the Trainer's default");
  sinew::cli::add_json(app, json);
  // One measurement in a process of its own: this program started again by itself.
  app.add_flag("--child", child_mode)->group("");
  app.add_flag("--inference", base.inference)->group("");
  // The measured peak of a precision on --threads threads, in a process of its own: --peak f32|bf16.
  std::string peak_precision;
  app.add_option("--peak", peak_precision)->group("");
  // The measured memory bandwidth on --threads threads, in a process of its own.
  bool bandwidth_mode = false;
  app.add_flag("--bandwidth", bandwidth_mode)->group("");
  sinew::cli::parse(app, argc, argv);
  if (!peak_precision.empty()) {
    zoo::result("peak_gflops", sinew::bench::matmul_peak_gflops(peak_precision, base.threads));
    return 0;
  }
  if (bandwidth_mode) {
    zoo::result("bandwidth_gbps", sinew::bench::triad_bandwidth_gbps(base.threads));
    return 0;
  }
  if (child_mode) {
    zoo::Config c = base;
    c.net = sinew::cli::single(app, nets, "--net");
    c.batch = sinew::cli::single(app, batches, "--batch");
    return child(c, sinew::cli::single(app, backends, "--backend"), sinew::cli::single(app, precisions, "--precision"));
  }
  const bool inference = !no_inference, training = !no_training, pytorch = !no_pytorch;
  if (!inference && !training) {
    std::fprintf(stderr, "zoo: --no-inference with --no-training leaves nothing to measure\n");
    return 2;
  }

  // Training at each batch with the given threads; inference with one thread at batch 1 and 42.
  std::vector<zoo::Config> configs;
  for (const auto& n : nets) {
    if (training)
      for (int b : batches) {
        zoo::Config c = base;
        c.net = n, c.batch = b;
        configs.push_back(c);
      }
    if (inference)
      for (int b : {1, 42}) {
        zoo::Config c = base;
        c.net = n, c.batch = b, c.threads = 1, c.inference = true;
        c.steps = b == 1 ? std::max(base.steps, 50) : base.steps;
        configs.push_back(c);
      }
  }

  const bool bf16 = std::ranges::find(precisions, "bf16") != precisions.end();
  // The peak of each precision and thread count, measured once in this run (bench/support/peak.hpp).
  std::map<std::pair<std::string, int>, double> peaks;
  const auto peak_of = [&](const std::string& precision, int threads) {
    auto [it, added] = peaks.try_emplace({precision, threads}, 0.0);
    if (added) {
      const Measurement m =
          run_child(fmt::format("/proc/{}/exe --peak {} --threads {}", getpid(), precision, threads));
      if (!m.failure.empty()) fmt::print(stderr, "zoo: measuring the {} peak failed: {}\n", precision, m.failure);
      const auto v = m.values.find("peak_gflops");
      it->second = v == m.values.end() ? 0.0 : v->second;
    }
    return it->second;
  };
  // The memory bandwidth of each thread count, measured once in this run (bench/support/bandwidth.hpp).
  std::map<int, double> bandwidths;
  const auto bandwidth_of = [&](int threads) {
    auto [it, added] = bandwidths.try_emplace(threads, 0.0);
    if (added) {
      const Measurement m = run_child(fmt::format("/proc/{}/exe --bandwidth --threads {}", getpid(), threads));
      if (!m.failure.empty()) fmt::print(stderr, "zoo: measuring the memory bandwidth failed: {}\n", m.failure);
      const auto v = m.values.find("bandwidth_gbps");
      it->second = v == m.values.end() ? 0.0 : v->second;
    }
    return it->second;
  };
  fmt::print("{:<15} {:<9} {:>6} {:>3} {:<7} {:<4} {:>10} {:>10} {:>6} {:>9} {:>9} {:>8} {:>5} {:>6} {:>4}{}\n", "net",
             "mode", "batch", "thr", "backend", "prec", "sinew/s", "torch/s", "ratio", "RSS MiB", "torch MiB", "GFLOP/s",
             "peak", "GB/s", "bw", bf16 ? " torch bf16/s ratio trip ns" : " trip ns");
  auto out = Json::array();
  for (const zoo::Config& c : configs) {
    // PyTorch in f32 (every ratio's anchor) and, when bf16 is measured, under bf16 autocast, each with the round
    // trip before and after its run: where the two sides ran with the vCPUs placed differently, the ratio measures
    // the placement as much as the code.
    Measurement torch, torch_bf16;
    std::array<double, 2> torch_trip{}, torch_bf16_trip{};
    auto run_torch = [&](const char* precision, std::array<double, 2>& trip) {
      trip[0] = sinew::bench::cache_line_round_trip_ns();
      Measurement t = run_child(fmt::format("/usr/bin/python3 {}/bench/pytorch/zoo.py --net {} --batch {} --threads {} "
                                            "--warmup {} --steps {} --precision {}{}",
                                            SINEW_SOURCE_DIR, c.net, c.batch, c.threads, c.warmup, c.steps, precision,
                                            c.inference ? " --inference" : ""));
      trip[1] = sinew::bench::cache_line_round_trip_ns();
      if (!t.failure.empty()) fmt::print(stderr, "zoo: PyTorch {} side of {}: {}\n", precision, c.net, t.failure);
      return t;
    };
    if (pytorch) torch = run_torch("f32", torch_trip);
    if (pytorch && bf16) torch_bf16 = run_torch("bf16", torch_bf16_trip);
    for (const auto& backend : backends) {
      for (const auto& precision : precisions) {
        if (precision == "bf16" && backend != "onednn") continue;  // only OneDnn has a bf16 policy
        const double trip_before = sinew::bench::cache_line_round_trip_ns();
        const Measurement m = run_child(child_command(c, backend, precision));
        const double trip_after = sinew::bench::cache_line_round_trip_ns();
        if (!m.failure.empty()) {
          fmt::print(stderr, "zoo: {} on {} ({}) failed: {}\n", c.net, backend, precision, m.failure);
          continue;
        }
        const auto get = [](const Measurement& x, const char* k) {
          const auto it = x.values.find(k);
          return it == x.values.end() ? 0.0 : it->second;
        };
        const double ips = get(m, "images_per_second"), tips = get(torch, "images_per_second");
        const double ratio = tips > 0 ? ips / tips : 0;
        const double tips_bf16 = precision == "bf16" ? get(torch_bf16, "images_per_second") : 0;
        const double ratio_bf16 = tips_bf16 > 0 ? ips / tips_bf16 : 0;
        // Training: 6 x forward MACs per image (forward, backward data, backward weights); inference: 2 x.
        // PyTorch's rate counts the network's multiply-adds, sinew's (and its share of the peak) those it performs:
        // fewer where a node folds layers together (VGG's first Dense on 32x32 images, measure.hpp).
        const double flops_per_image = (c.inference ? 2.0 : 6.0) * get(m, "forward_macs");
        const double performed_flops_per_image = (c.inference ? 2.0 : 6.0) * get(m, "performed_macs");
        const double gflops = performed_flops_per_image * ips / 1e9, peak = peak_of(precision, c.threads);
        // Memory traffic by metrics/traffic.hpp's model, and its share of the bandwidth measured in this run.
        const double gbps = get(m, "bytes_per_image") * ips / 1e9, bandwidth = bandwidth_of(c.threads);
        fmt::print("{:<15} {:<9} {:>6} {:>3} {:<7} {:<4} {:>10.1f} {:>10.1f} {:>6.2f} {:>9.0f} {:>9.0f} {:>8.1f} {:>4.0f}% "
                   "{:>6.1f} {:>3.0f}%",
                   c.net, c.inference ? "inference" : "train", c.batch, c.threads, backend, precision, ips, tips, ratio,
                   get(m, "peak_rss_bytes") / 1048576.0, get(torch, "peak_rss_bytes") / 1048576.0, gflops,
                   peak > 0 ? 100.0 * gflops / peak : 0.0, gbps, bandwidth > 0 ? 100.0 * gbps / bandwidth : 0.0);
        if (bf16) fmt::print(" {:>12.1f} {:>5.2f}", tips_bf16, ratio_bf16);
        fmt::print(" {:>4.0f}/{:.0f}", trip_before, trip_after);
        if (tips > 0) fmt::print(" torch {:.0f}/{:.0f}", torch_trip[0], torch_trip[1]);
        if (tips_bf16 > 0) fmt::print(" autocast {:.0f}/{:.0f}", torch_bf16_trip[0], torch_bf16_trip[1]);
        fmt::print("\n");
        for (const auto& op : m.operators) fmt::print("    {}\n", op);
        std::fflush(stdout);
        auto j = Json::object();
        j["net"] = c.net;
        j["mode"] = c.inference ? "inference" : "train";
        j["batch"] = c.batch;
        j["threads"] = c.threads;
        j["core_round_trip_ns"] = Json::array({trip_before, trip_after});
        j["pytorch_core_round_trip_ns"] = tips > 0 ? Json::array({torch_trip[0], torch_trip[1]}) : Json();
        j["pytorch_bf16_autocast_core_round_trip_ns"] =
            tips_bf16 > 0 ? Json::array({torch_bf16_trip[0], torch_bf16_trip[1]}) : Json();
        j["backend"] = backend;
        j["precision"] = precision;
        j["parameters"] = get(m, "parameters");
        j["images_per_second"] = ips;
        j["pytorch_images_per_second"] = tips > 0 ? Json(tips) : Json();
        j["ratio"] = ratio > 0 ? Json(ratio) : Json();
        j["peak_rss_bytes"] = get(m, "peak_rss_bytes");
        j["pytorch_peak_rss_bytes"] = tips > 0 ? Json(get(torch, "peak_rss_bytes")) : Json();
        j["pytorch_images_per_second_nchw"] = tips > 0 ? Json(get(torch, "images_per_second_nchw")) : Json();
        j["pytorch_images_per_second_channels_last"] =
            tips > 0 ? Json(get(torch, "images_per_second_channels_last")) : Json();
        j["pytorch_bf16_autocast_images_per_second"] = tips_bf16 > 0 ? Json(tips_bf16) : Json();
        j["ratio_to_pytorch_bf16_autocast"] = ratio_bf16 > 0 ? Json(ratio_bf16) : Json();
        j["forward_macs_per_image"] = get(m, "forward_macs");
        j["performed_macs_per_image"] = get(m, "performed_macs");
        j["gflops"] = gflops;
        j["peak_gflops"] = peak > 0 ? Json(peak) : Json();
        j["share_of_peak"] = peak > 0 ? Json(gflops / peak) : Json();
        j["bytes_per_image"] = get(m, "bytes_per_image");
        j["gbps"] = gbps;
        j["bandwidth_gbps"] = bandwidth > 0 ? Json(bandwidth) : Json();
        j["share_of_bandwidth"] = bandwidth > 0 ? Json(gbps / bandwidth) : Json();
        j["pytorch_gbps"] = tips > 0 ? Json(get(m, "bytes_per_image") * tips / 1e9) : Json();
        j["pytorch_gflops"] = tips > 0 ? Json(flops_per_image * tips / 1e9) : Json();
        j["pytorch_bf16_autocast_gflops"] = tips_bf16 > 0 ? Json(flops_per_image * tips_bf16 / 1e9) : Json();
        // Which PyTorch the anchor ran (1.13 on Debian 12, 2.6 on 13) and its torch.compile candidate, on 2.x.
        j["pytorch"] = tips > 0 ? Json(info_of(torch, "torch")) : Json();
        j["pytorch_compile"] = tips > 0 ? Json(info_of(torch, "compile")) : Json();
        j["pytorch_images_per_second_compile"] =
            get(torch, "images_per_second_compile") > 0 ? Json(get(torch, "images_per_second_compile")) : Json();
        j["pytorch_compile_seconds"] = get(torch, "compile_seconds") > 0 ? Json(get(torch, "compile_seconds")) : Json();
        if (!m.operators.empty()) {
          auto ops = Json::array();
          for (const auto& op : m.operators) ops.push_back(op);
          j["top_operators"] = ops;
        }
        out.push_back(std::move(j));
      }
    }
  }
  if (!json.empty()) sinew::metrics::save_json(out, json);
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "zoo: %s\n", e.what());
  return 1;
}
