// bench/zoo/measure.hpp: one measurement of one zoo network on one backend, run in a child process of
// bench/zoo so that each configuration's peak resident memory is its own.
//
// The result goes to stdout as "result KEY VALUE" lines, which bench/zoo's driver reads back.
#pragma once

#include <algorithm>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "sinew/sinew.hpp"
#include "support/train_step.hpp"

namespace sinew::bench::zoo {

namespace nets = sinew::nets;
using Cifar = sinew::Input<3, 32, 32>;
using Small = sinew::Input<3, 64, 64>;  // seed 002 feeds AlexNet 3x64x64 CIFAR images

// The networks of the zoo table, as the goals name them.
using AlexNet       = nets::AlexNet<Small, 10>;                        // 57.0M parameters
using ResNet18      = nets::ResNet18<Cifar, 10, nets::ImageNetStem>;   // 11.2M
using ResNet18Cifar = nets::ResNet18<Cifar, 10, nets::CifarStem>;      // 11.2M, 0.56 GFLOP per image
using ResNet50      = nets::ResNet50<Cifar, 10, nets::ImageNetStem>;   // 23.5M
using VGG16BN       = nets::VGG16BN<Cifar, 10>;                        // 134.3M
using MobileNetV2   = nets::MobileNetV2<Cifar, 10>;                    // 2.2M, depthwise: bandwidth-bound
using ResNeXt50     = nets::ResNeXt50_32x4d<Cifar, 10>;                // 23.0M, grouped 3x3 (32 groups)

inline const std::vector<std::string>& net_names() {
  static const std::vector<std::string> names = {"alexnet",  "resnet18",     "resnet18_cifar", "resnet50",
                                                 "vgg16_bn", "mobilenet_v2", "resnext50_32x4d"};
  return names;
}

/// Calls f.template operator()<Net>() for the network called `name`; false for an unknown name.
template <class F>
bool with_net(const std::string& name, F&& f) {
  if (name == "alexnet") return f.template operator()<AlexNet>(), true;
  if (name == "resnet18") return f.template operator()<ResNet18>(), true;
  if (name == "resnet18_cifar") return f.template operator()<ResNet18Cifar>(), true;
  if (name == "resnet50") return f.template operator()<ResNet50>(), true;
  if (name == "vgg16_bn") return f.template operator()<VGG16BN>(), true;
  if (name == "mobilenet_v2") return f.template operator()<MobileNetV2>(), true;
  if (name == "resnext50_32x4d") return f.template operator()<ResNeXt50>(), true;
  return false;
}

/// The same for ResNet-18 only (both stems): what the mixed backends of bench/zoo/mix.cpp run, so that their
/// translation unit instantiates two networks, not five.
template <class F>
bool with_resnet18(const std::string& name, F&& f) {
  if (name == "resnet18") return f.template operator()<ResNet18>(), true;
  if (name == "resnet18_cifar") return f.template operator()<ResNet18Cifar>(), true;
  return false;
}

struct Config {
  std::string net;
  int batch = 42, threads = 2, warmup = 10, steps = 10;
  bool inference = false;  // forward only, evaluation mode; otherwise a full training step
  bool profile = false;    // also print the top operator kinds and slowest layers of a separately profiled run
  bool update_in_backward = false;  // dist::Local({.update_in_backward = true}), not the Trainer's default
};

inline void result(const char* key, double value) { std::printf("result %s %.9g\n", key, value); }

/// Times `steps` steps after `warmup`, as PyTorch's side does: forward, loss, backward, SGD with momentum (as the
/// Trainer updates, bench/support/train_step.hpp; or, for inference, forward in evaluation mode only), on one fixed
/// synthetic batch.
template <class Net, class B, class Profile>
double time_steps(typename B::context& ctx, const Config& c, Model<Net, B, Profile>& model) {
  optim::Sgd sgd({.lr = 0.01f, .momentum = 0.9f}, model.parameters().size());
  local_step step(model, sgd, c.update_in_backward);
  Rng rng(2);
  std::vector<float> x(std::size_t(c.batch) * Net::input_shape::kSize);
  std::vector<std::int32_t> y(std::size_t(c.batch));
  for (float& v : x) v = rng.normal();
  for (auto& v : y) v = std::int32_t(rng.below(10));
  model.set_training(!c.inference);
  (void)ctx;
  metrics::Stopwatch watch;
  for (int s = 0; s < c.warmup + c.steps; ++s) {
    if (s == c.warmup) {
      watch = {};
      if constexpr (Profile::kEnabled) model.profile().reset();
    }
    model.forward(x, c.batch);
    if (c.inference) continue;
    model.loss(y);
    metrics::PhaseSeconds phases;
    const double inside = step.backward_and_update(phases);
    // the update after backward, as the Trainer profiles it (its kind weights_update)
    if constexpr (Profile::kEnabled) model.profile().add(metrics::OpKind::weights_update, phases.update - inside);
  }
  return watch.elapsed();
}

/// The multiply-adds per image that backend B performs on Net's forward: its lowered nodes', fewer than the
/// network's (metrics::forward_macs) where a node folds layers together (an enlarging adaptive pool's Dense computes
/// on the pool's input, layers/detail/pooled_dense.hpp).
template <class B, class Net>
constexpr double performed_macs() {
  return sinew::detail::macs_of(typename Model<Net, B>::nodes{});
}

/// kResNet18Only: only the networks of with_resnet18 (the mixed backends).
template <class B, bool kResNet18Only = false>
int measure(const Config& c) {
  typename B::context ctx({.threads = c.threads});
  const auto run = [&]<class Net>() {
    double seconds = 0;
    {
      Model<Net, B> model(ctx, {.seed = 1});
      seconds = time_steps(ctx, c, model);
      result("parameters", double(Net::kParams));
      result("forward_macs", metrics::forward_macs<Net>);
      result("performed_macs", performed_macs<B, Net>());
      // The bytes a step moves by metrics/traffic.hpp's model, per image.
      result("bytes_per_image",
             (c.inference ? metrics::inference_bytes<Net>(c.batch) : metrics::training_bytes<Net>(c.batch)) / c.batch);
    }
    result("images_per_second", double(c.batch) * c.steps / seconds);
    result("peak_rss_bytes", double(metrics::peak_rss_bytes()));
    if (!c.profile) return;
    Model<Net, B, metrics::OperatorProfile> model(ctx, {.seed = 1});
    // An inference row profiles its evaluation-mode passes (the profile records training steps unless asked),
    // more of them: a batch-1 pass takes milliseconds.
    if (c.inference) model.profile().record(metrics::OperatorProfile::Passes::evaluation);
    Config short_run = c;
    short_run.warmup = std::min(c.warmup, 3), short_run.steps = std::min(c.steps, c.inference ? 50 : 5);
    time_steps(ctx, short_run, model);
    // The operator kinds by time per step (seed 000's Figs. 5 and 7), largest first.
    std::vector<std::pair<double, std::string>> top;
    for (const auto& [kind, seconds] : model.profile().by_kind()) top.push_back({seconds / short_run.steps, kind});
    std::sort(top.rbegin(), top.rend());
    // The six largest, the update and the layout conversions between the backends of a backend::Mix wherever they
    // rank, and the sum of every kind: the profiled step, which the unprofiled one is to be read against.
    double step = 0;
    for (std::size_t i = 0; i < top.size(); ++i) {
      step += top[i].first;
      if (i < 6 || top[i].second == "weights_update" || top[i].second.starts_with("reorder"))
        std::printf("operator %s %.2f ms\n", top[i].second.c_str(), 1e3 * top[i].first);
    }
    std::printf("operator every kind (the profiled step) %.2f ms; unprofiled %.2f ms\n", 1e3 * step,
                1e3 * seconds / c.steps);
    // The eight layers that take longest, each with its GFLOP/s forward (2 x its multiply-adds) and backward
    // (4 x: data and weights, as metrics/flops.hpp counts a step), to tell which shapes run below the peak.
    using Nodes = typename Model<Net, B, metrics::OperatorProfile>::nodes;
    const std::vector<double> macs = []<class... N>(type_list<N...>) {
      return std::vector<double>{sinew::detail::macs_of<typename N::applied>()...};
    }(Nodes{});
    const auto& nodes = model.profile().nodes();
    std::vector<std::size_t> order(nodes.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    const auto node_seconds = [&](std::size_t i) { return nodes[i].forward_seconds + nodes[i].backward_seconds; };
    std::sort(order.begin(), order.end(), [&](auto a, auto b) { return node_seconds(a) > node_seconds(b); });
    const double per = 1.0 / short_run.steps, images = double(c.batch) * short_run.steps;
    const auto gflops = [&](double flops, double s) { return s > 0 ? flops * images / s / 1e9 : 0.0; };
    for (std::size_t k = 0; k < std::min<std::size_t>(8, order.size()); ++k) {
      const std::size_t i = order[k];
      std::printf("operator layer %zu %s: forward %.2f ms %.1f GFLOP/s", i, nodes[i].name.c_str(),
                  1e3 * nodes[i].forward_seconds * per, gflops(2 * macs[i], nodes[i].forward_seconds));
      if (!c.inference)
        std::printf(", backward %.2f ms %.1f GFLOP/s", 1e3 * nodes[i].backward_seconds * per,
                    gflops(4 * macs[i], nodes[i].backward_seconds));
      std::printf("\n");
    }
  };
  bool known = false;
  if constexpr (kResNet18Only)
    known = with_resnet18(c.net, run);
  else
    known = with_net(c.net, run);
  if (!known) {
    std::fprintf(stderr, "zoo: %s network %s\n",
                 kResNet18Only ? "the mixed backends run resnet18 and resnet18_cifar, not" : "unknown", c.net.c_str());
    return 2;
  }
  return 0;
}

}  // namespace sinew::bench::zoo
