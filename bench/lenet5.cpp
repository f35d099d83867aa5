// bench/lenet5: training images/s of LeNet-5 on 3x32x32 input (CIFAR-10 shaped, tanh, average pooling)
// next to PyTorch on the same network, batch and thread count, in the same run.
//
//   lenet5 [--batch 42,128] [--threads 2] [--warmup 10] [--steps 200] [--repeats 3] [--no-pytorch] [--profile]
//          [--json FILE]
//
// A timed step is what PyTorch's is: forward, softmax cross-entropy, backward, SGD-with-momentum update, on one
// fixed synthetic batch. The best of --repeats runs is reported on both sides.
#include <cstdio>
#include <vector>

#include "sinew/sinew.hpp"
#include "support/anchor.hpp"
#include "cli/cli.hpp"

using Net     = sinew::nets::LeNet5<sinew::Input<3, 32, 32>>;  // 62,006 parameters
using Backend = sinew::backend::OneDnn;                        // oneDNN primitives
using Optim   = sinew::optim::Sgd;                             // lr 0.01, momentum 0.9 (as the PyTorch side)

struct Result {
  double images_per_second = 0;
  sinew::metrics::PhaseSeconds phases;  // per step, of the best repeat
  sinew::metrics::Json operators;       // per-operator times of a separate profiled run (--profile)
};

template <class Profile = sinew::metrics::NoProfile>
Result measure(Backend::context& ctx, int batch, int warmup, int steps, int repeats) {
  sinew::Model<Net, Backend, Profile> model(ctx, {.seed = 1});
  Optim sgd({.lr = 0.01f, .momentum = 0.9f}, model.parameters().size());
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
      model.backward();
      phases.backward += w.lap();
      sgd.step(model.parameters(), model.gradients());
      const double update = w.lap();
      phases.update += update;
      if constexpr (Profile::kEnabled) model.profile().add(sinew::metrics::OpKind::weights_update, update);
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
  int threads = 2, warmup = 10, steps = 200, repeats = 3;
  bool no_pytorch = false, profile = false;
  std::string json;
  CLI::App app{"Training images/s of LeNet-5 on 3x32x32 next to PyTorch, in the same run", "lenet5"};
  app.add_option("--batch", batches, "batch sizes, comma-separated")
      ->delimiter(',')
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  sinew::cli::add_threads(app, threads);
  app.add_option("--warmup", warmup, "untimed steps first")->capture_default_str()->check(CLI::NonNegativeNumber);
  app.add_option("--steps", steps, "timed steps")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--repeats", repeats, "runs; the best is reported")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_flag("--no-pytorch", no_pytorch, "skip the PyTorch anchor");
  app.add_flag("--profile", profile, "add per-operator times from a separate profiled run");
  sinew::cli::add_json(app, json);
  sinew::cli::parse(app, argc, argv);
  const bool pytorch = !no_pytorch;

  Backend::context ctx({.threads = threads});
  std::vector<Result> results;
  for (int b : batches) {
    results.push_back(measure(ctx, b, warmup, steps, repeats));
    if (profile) results.back().operators = measure<sinew::metrics::OperatorProfile>(ctx, b, warmup, steps, 1).operators;
  }

  sinew::bench::Anchor anchor;
  if (pytorch) {
    std::string list;
    for (int b : batches) list += (list.empty() ? "" : ",") + std::to_string(b);
    anchor = sinew::bench::run_pytorch_anchor(SINEW_SOURCE_DIR "/bench/pytorch/lenet5.py",
                                              "--batch " + list + " --threads " + std::to_string(threads) +
                                                  " --warmup " + std::to_string(warmup) + " --steps " +
                                                  std::to_string(steps) + " --repeats " + std::to_string(repeats));
    if (!anchor.note.empty()) std::fprintf(stderr, "lenet5: %s\n", anchor.note.c_str());
  }

  std::printf("LeNet-5 3x32x32 training, %d threads, %d warm-up + %d timed steps, best of %d\n", ctx.threads(),
              warmup, steps, repeats);
  std::printf("%6s %12s %12s %7s   %s\n", "batch", "sinew img/s", "torch img/s", "ratio", "sinew ms/step: fwd bwd upd");
  auto out = sinew::metrics::Json::array();
  for (std::size_t i = 0; i < batches.size(); ++i) {
    const int b = batches[i];
    const Result& r = results[i];
    const double torch = anchor.images_per_second.count(b) ? anchor.images_per_second[b] : 0;
    const double ratio = torch > 0 ? r.images_per_second / torch : 0;
    std::printf("%6d %12.0f %12.0f %7.2f   %.3f %.3f %.3f\n", b, r.images_per_second, torch, ratio,
                1e3 * r.phases.forward, 1e3 * r.phases.backward, 1e3 * r.phases.update);
    auto j = sinew::metrics::Json::object();
    j["net"] = "lenet5";
    j["input"] = "3x32x32";
    j["batch"] = b;
    j["threads"] = ctx.threads();
    j["backend"] = Backend::kName;
    j["images_per_second"] = r.images_per_second;
    j["pytorch_images_per_second"] = torch > 0 ? sinew::metrics::Json(torch) : sinew::metrics::Json();
    j["ratio"] = ratio > 0 ? sinew::metrics::Json(ratio) : sinew::metrics::Json();
    auto ph = sinew::metrics::Json::object();
    ph["forward"] = r.phases.forward;
    ph["backward"] = r.phases.backward;
    ph["update"] = r.phases.update;
    j["phase_seconds_per_step"] = ph;
    if (profile) j["operators"] = r.operators;
    j["pytorch"] = anchor.torch_version.empty() ? sinew::metrics::Json() : sinew::metrics::Json(anchor.torch_version + ", BLAS " + anchor.blas);
    out.push_back(std::move(j));
  }
  if (!json.empty()) sinew::metrics::save_json(out, json);
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "lenet5: %s\n", e.what());
  return 1;
}
