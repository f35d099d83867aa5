// bench/lenet5: training images/s of LeNet-5 on 3x32x32 input (CIFAR-10 shaped, tanh, average pooling)
// next to PyTorch on the same network, batch and thread count, in the same run.
//
//   lenet5 [--batch 42,128] [--precision f32,bf16] [--threads 2] [--warmup 10] [--steps 200] [--repeats 3]
//          [--no-pytorch] [--profile] [--json FILE]
//
// A timed step is what PyTorch's is: forward, softmax cross-entropy, backward, SGD-with-momentum update, on one
// fixed synthetic batch. The best of --repeats runs is reported on both sides. --precision bf16 runs sinew on
// backend::OneDnnBf16 and compares it with PyTorch in f32 and with PyTorch under
// torch.autocast("cpu", dtype=torch.bfloat16), both in the same run. Each row shows sinew's GFLOP/s (6 x forward
// multiply-adds x images / s: sinew/metrics/flops.hpp) and its share of its precision's peak on the same threads,
// measured in this run with oneDNN's matmul before the steps (bench/support/peak.hpp). The header names how far
// apart the host had placed the first two CPUs before sinew's runs, between them and PyTorch's, and after
// (bench/support/core_latency.hpp): on 2 threads LeNet-5's speed follows it, and a ratio whose two sides ran under
// different placements measures the placement too (bench/support/rounds_table.py sets such rounds apart).
#include <cstdio>
#include <map>
#include <string>
#include <type_traits>
#include <vector>

#include "sinew/sinew.hpp"
#include "support/anchor.hpp"
#include "support/core_latency.hpp"
#include "support/peak.hpp"
#include "support/train_step.hpp"
#include "cli/cli.hpp"

using Net     = sinew::nets::LeNet5<sinew::Input<3, 32, 32>>;  // 62,006 parameters
using Backend = sinew::backend::OneDnn;                        // oneDNN primitives (--precision f32)
using Bf16    = sinew::backend::OneDnnBf16;                    // bf16 convolutions and inner products (bf16)
using Optim   = sinew::optim::Sgd;                             // lr 0.01, momentum 0.9 (as the PyTorch side)

struct Result {
  double images_per_second = 0;
  sinew::metrics::PhaseSeconds phases;  // per step, of the best repeat
  sinew::metrics::Json operators;       // per-operator times of a separate profiled run (--profile)
};

template <class B, class Profile = sinew::metrics::NoProfile>
Result measure(typename B::context& ctx, int batch, int warmup, int steps, int repeats) {
  sinew::Model<Net, B, Profile> model(ctx, {.seed = 1});
  Optim sgd({.lr = 0.01f, .momentum = 0.9f}, model.parameters().size());
  sinew::bench::local_step step(model, sgd);  // as the Trainer updates (no LeNet-5 layer updates inside backward)
  sinew::Rng rng(2);
  std::vector<float> x(static_cast<std::size_t>(batch) * Net::input_shape::kSize);
  std::vector<std::int32_t> y(static_cast<std::size_t>(batch));
  for (float& v : x) v = rng.normal();
  for (auto& v : y) v = std::int32_t(rng.below(10));
  Result best;
  for (int r = 0; r < repeats; ++r) {
    sinew::metrics::PhaseSeconds phases;
    for (int s = 0; s < warmup + steps; ++s) {
      if (s == warmup) {
        phases = {};
        if constexpr (Profile::kEnabled) model.profile().reset();
      }
      sinew::metrics::Stopwatch w;
      model.forward(x, batch);
      model.loss(y);
      phases.forward += w.lap();
      const double updated = phases.update;
      const double inside = step.backward_and_update(phases);
      if constexpr (Profile::kEnabled)
        model.profile().add(sinew::metrics::OpKind::weights_update, phases.update - updated - inside);
    }
    const double ips = double(batch) * steps / phases.total();
    if (ips > best.images_per_second) {
      best.images_per_second = ips;
      best.phases = phases;
    }
  }
  best.phases.forward /= steps, best.phases.backward /= steps, best.phases.update /= steps;
  if constexpr (Profile::kEnabled) {
    best.operators = model.profile().to_json();
    const auto& profile = model.profile();
    const double per = 1e3 / double(profile.steps() ? profile.steps() : 1);
    std::printf("batch %d, per node (ms per step):\n", batch);
    for (const auto& e : profile.nodes())
      std::printf("  %-14s forward %7.3f  backward %7.3f\n", e.name.c_str(), e.forward_seconds * per,
                  e.backward_seconds * per);
    std::printf("batch %d, per operator kind (ms per step):\n", batch);
    for (const auto& [kind, seconds] : profile.by_kind()) std::printf("  %-34s %7.3f\n", kind.c_str(), seconds * per);
  }
  return best;
}

int main(int argc, char** argv) try {
  std::vector<int> batches{42, 128};
  std::vector<std::string> precisions{"f32"};
  int threads = 2, warmup = 10, steps = 200, repeats = 3;
  bool no_pytorch = false, profile = false;
  std::string json;
  CLI::App app{"Training images/s of LeNet-5 on 3x32x32 next to PyTorch, in the same run", "lenet5"};
  app.add_option("--batch", batches, "batch sizes, comma-separated")
      ->delimiter(',')
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--precision", precisions,
                 "f32 (backend::OneDnn), bf16 (backend::OneDnnBf16, against PyTorch f32 and PyTorch under bf16 "
                 "autocast), comma-separated")
      ->delimiter(',')
      ->capture_default_str()
      ->check(CLI::IsMember({"f32", "bf16"}));
  sinew::cli::add_threads(app, threads);
  app.add_option("--warmup", warmup, "untimed steps first")->capture_default_str()->check(CLI::NonNegativeNumber);
  app.add_option("--steps", steps, "timed steps")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--repeats", repeats, "runs; the best is reported")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_flag("--no-pytorch", no_pytorch, "skip the PyTorch anchor");
  app.add_flag("--profile", profile, "add per-operator times from a separate profiled run");
  sinew::cli::add_json(app, json);
  sinew::cli::parse(app, argc, argv);
  const bool pytorch = !no_pytorch;

  const double round_trip_before = sinew::bench::cache_line_round_trip_ns();
  // Each precision's results, batch by batch; OneDnnBf16's context refuses with a sentence on a CPU without bf16.
  std::map<std::string, std::vector<Result>> results;
  std::map<std::string, double> peaks;  // GFLOP/s of oneDNN's matmul in each precision, on the same threads
  int context_threads = 0;
  auto measure_all = [&]<class B>() {
    typename B::context ctx({.threads = threads});
    context_threads = ctx.threads();
    const std::string precision = std::is_same_v<B, Bf16> ? "bf16" : "f32";
    peaks[precision] = sinew::bench::matmul_peak_gflops(precision, context_threads);
    std::vector<Result> rs;
    for (int b : batches) {
      rs.push_back(measure<B>(ctx, b, warmup, steps, repeats));
      if (profile) rs.back().operators = measure<B, sinew::metrics::OperatorProfile>(ctx, b, warmup, steps, 1).operators;
    }
    return rs;
  };
  for (const auto& p : precisions)
    results[p] = p == "bf16" ? measure_all.template operator()<Bf16>() : measure_all.template operator()<Backend>();

  // PyTorch in f32 always (the anchor of every ratio), and under bf16 autocast when bf16 is measured. The round
  // trip between the two sides' runs closes sinew's and opens PyTorch's: where they differ, the vCPUs moved.
  const double round_trip_between = sinew::bench::cache_line_round_trip_ns();
  std::map<std::string, sinew::bench::Anchor> anchors;
  const bool bf16 = results.count("bf16") > 0;
  if (pytorch)
    for (const std::string p : {"f32", "bf16"}) {
      if (p == "bf16" && !bf16) continue;
      std::string list;
      for (int b : batches) list += (list.empty() ? "" : ",") + std::to_string(b);
      anchors[p] = sinew::bench::run_pytorch_anchor(
          SINEW_SOURCE_DIR "/bench/pytorch/lenet5.py",
          "--batch " + list + " --threads " + std::to_string(threads) + " --warmup " + std::to_string(warmup) +
              " --steps " + std::to_string(steps) + " --repeats " + std::to_string(repeats) + " --precision " + p);
      if (!anchors[p].note.empty()) std::fprintf(stderr, "lenet5: PyTorch %s: %s\n", p.c_str(), anchors[p].note.c_str());
    }
  const auto torch_at = [&](const std::string& p, int b) {
    auto it = anchors.find(p);
    return it != anchors.end() && it->second.images_per_second.count(b) ? it->second.images_per_second[b] : 0.0;
  };

  const double round_trip_after = sinew::bench::cache_line_round_trip_ns();
  std::printf("LeNet-5 3x32x32 training, %d threads, %d warm-up + %d timed steps, best of %d; a cache line's round "
              "trip between the first two CPUs %.0f ns before, %.0f ns after sinew's runs, %.0f ns after PyTorch's\n",
              context_threads, warmup, steps, repeats, round_trip_before, round_trip_between, round_trip_after);
  std::printf("%6s %5s %12s %12s %7s %13s %9s %8s %5s   %s\n", "batch", "prec", "sinew img/s", "torch img/s", "ratio",
              "torch bf16/s", "ratio", "GFLOP/s", "peak", "sinew ms/step: fwd bwd upd");
  constexpr double kFlopsPerImage = 6.0 * sinew::metrics::forward_macs<Net>;
  auto out = sinew::metrics::Json::array();
  for (const auto& [precision, rs] : results) {
    for (std::size_t i = 0; i < batches.size(); ++i) {
      const int b = batches[i];
      const Result& r = rs[i];
      const double torch = torch_at("f32", b), torch_bf16 = precision == "bf16" ? torch_at("bf16", b) : 0;
      const double ratio = torch > 0 ? r.images_per_second / torch : 0;
      const double ratio_bf16 = torch_bf16 > 0 ? r.images_per_second / torch_bf16 : 0;
      const double gflops = kFlopsPerImage * r.images_per_second / 1e9, peak = peaks[precision];
      std::printf("%6d %5s %12.0f %12.0f %7.2f %13.0f %9.2f %8.1f %4.0f%%   %.3f %.3f %.3f\n", b, precision.c_str(),
                  r.images_per_second, torch, ratio, torch_bf16, ratio_bf16, gflops, peak > 0 ? 100 * gflops / peak : 0.0,
                  1e3 * r.phases.forward, 1e3 * r.phases.backward, 1e3 * r.phases.update);
      auto j = sinew::metrics::Json::object();
      j["net"] = "lenet5";
      j["input"] = "3x32x32";
      j["batch"] = b;
      j["threads"] = context_threads;
      j["core_round_trip_ns"] = sinew::metrics::Json::array({round_trip_before, round_trip_between});
      j["pytorch_core_round_trip_ns"] = torch > 0 ? sinew::metrics::Json::array({round_trip_between, round_trip_after})
                                                  : sinew::metrics::Json();
      j["precision"] = precision;
      j["backend"] = precision == "bf16" ? Bf16::kName : Backend::kName;
      j["images_per_second"] = r.images_per_second;
      j["pytorch_images_per_second"] = torch > 0 ? sinew::metrics::Json(torch) : sinew::metrics::Json();
      j["ratio"] = ratio > 0 ? sinew::metrics::Json(ratio) : sinew::metrics::Json();
      j["pytorch_bf16_autocast_images_per_second"] =
          torch_bf16 > 0 ? sinew::metrics::Json(torch_bf16) : sinew::metrics::Json();
      j["ratio_to_pytorch_bf16_autocast"] = ratio_bf16 > 0 ? sinew::metrics::Json(ratio_bf16) : sinew::metrics::Json();
      j["forward_macs_per_image"] = sinew::metrics::forward_macs<Net>;
      j["gflops"] = gflops;
      j["peak_gflops"] = peak > 0 ? sinew::metrics::Json(peak) : sinew::metrics::Json();
      j["share_of_peak"] = peak > 0 ? sinew::metrics::Json(gflops / peak) : sinew::metrics::Json();
      j["pytorch_gflops"] = torch > 0 ? sinew::metrics::Json(kFlopsPerImage * torch / 1e9) : sinew::metrics::Json();
      auto ph = sinew::metrics::Json::object();
      ph["forward"] = r.phases.forward;
      ph["backward"] = r.phases.backward;
      ph["update"] = r.phases.update;
      j["phase_seconds_per_step"] = ph;
      if (profile) j["operators"] = r.operators;
      const auto& anchor = anchors["f32"];
      j["pytorch"] = anchor.torch_version.empty() ? sinew::metrics::Json() : sinew::metrics::Json(anchor.torch_version + ", BLAS " + anchor.blas);
      // The best of eager NCHW, channels_last and (PyTorch 2) torch.compile, and the compile's own figures.
      const auto at = [b](const std::map<int, double>& by_batch) {
        const auto it = by_batch.find(b);
        return it == by_batch.end() ? sinew::metrics::Json() : sinew::metrics::Json(it->second);
      };
      const auto best_it = anchor.best.find(b);
      j["pytorch_best"] = best_it == anchor.best.end() ? sinew::metrics::Json() : sinew::metrics::Json(best_it->second);
      j["pytorch_images_per_second_compile"] = at(anchor.images_per_second_compile);
      j["pytorch_compile_seconds"] = at(anchor.compile_seconds);
      out.push_back(std::move(j));
    }
  }
  if (!json.empty()) sinew::metrics::save_json(out, json);
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "lenet5: %s\n", e.what());
  return 1;
}
