// tests/support/torchvision_golden.hpp: a zoo net on OneDnn against what torchvision computes for it (the suite
// onednn_vs_pytorch in tests/nets/test_resnet.cpp and tests/nets/test_lenet5_alexnet_vgg.cpp).
//
// tests/reference/make_golden.py sets every state_dict tensor of the torchvision model from a formula of the
// tensor's name and the element's index, runs one training-mode forward and backward pass (BatchNorm on batch
// statistics, dropout p = 0) and keeps the logits, the loss, each gradient's norm and 8 sampled entries, and the
// running statistics after the pass in tests/reference/golden/<net>.json. Here sinew computes the same weights
// by name through state_dict_entries<Net>(), so a wrong name or a misplaced tensor shows as a wrong result, and
// compares. Nothing here needs PyTorch.
//
// The bound is 1e-3 relative, or 4 times PyTorch's own float32 error where the problem is ill-conditioned
// enough that PyTorch's float32 run is further than that from the float64 golden values (the deep ResNets,
// whose layer4 BatchNorms normalise four nearly equal values at 32 x 32 input).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "sinew/backend/onednn.hpp"
#include "sinew/io/detail/json_reader.hpp"
#include "sinew/model.hpp"
#include "sinew/nets/state_dict.hpp"

namespace sinew::test {

/// FNV-1a over the name: the tensor's stream in the formula.
inline std::uint64_t name_hash(std::string_view name) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : name) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

/// u in [-1, 1): 24 bits of mix64(hash ^ mix64(i)), as reference_nets.uniform.
inline double formula_unit(std::uint64_t hash, std::uint64_t i) {
  const std::uint64_t z = mix64(hash ^ mix64(i));
  return double(std::int64_t(z >> 40) - 8388608) / 8388608.0;
}

/// Fills `out` with tensor `key` of shape `shape` as reference_nets.formula does.
inline void formula_fill(std::string_view key, const std::vector<std::int64_t>& shape, std::span<float> out) {
  const std::uint64_t h = name_hash(key);
  const bool weight = key.ends_with(".weight");
  const bool matrix = weight && shape.size() >= 2;
  const double bound = matrix ? std::sqrt(6.0 / double(out.size() / std::size_t(shape[0]))) : 0.0;
  const bool around_one = (weight && !matrix) || key.ends_with(".running_var");
  const double scale = key == "input" ? 1.0 : 0.1;
  for (std::size_t i = 0; i < out.size(); ++i) {
    const double u = formula_unit(h, i);
    out[i] = float(matrix ? u * bound : around_one ? 1.0 + u * 0.1 : u * scale);
  }
}

/// A golden file, parsed.
struct Golden {
  io::detail::json root;

  static Golden load(const std::string& net) {
    const std::string path = std::string(SINEW_GOLDEN_DIR) + "/" + net + ".json";
    std::ifstream f(path);
    if (!f) throw error("golden file " + path + " is missing; run tests/reference/make_golden.py");
    std::stringstream text;
    text << f.rdbuf();
    return {io::detail::parse_json(text.str())};
  }
  const io::detail::json& at(std::string_view key) const {
    const auto* v = io::detail::member(root, key);
    if (!v) throw error("golden file lacks \"" + std::string(key) + "\"");
    return *v;
  }
  static double number(const io::detail::json& v) {
    if (!v.is_number()) throw error("golden file: expected a number");
    return v.get<double>();
  }
  std::vector<double> numbers(std::string_view key) const { return numbers_of(at(key)); }
  static std::vector<double> numbers_of(const io::detail::json& v) {
    std::vector<double> out;
    for (const auto& e : v) out.push_back(number(e));
    return out;
  }
};

/// The largest |a - b| / max(|b|, floor) over a golden tensor's entries: relative where entries are large,
/// relative to the tensor's typical size (floor) where an entry is near 0.
struct Worst {
  double error = 0;
  std::string where;
  void add(double got, double want, double floor, const std::string& what) {
    const double e = std::fabs(got - want) / std::max({std::fabs(want), floor, 1e-30});
    if (e > error || std::isnan(e)) error = std::isnan(e) ? INFINITY : e, where = what;
  }
};

inline constexpr double kTolerance = 1e-3;

/// Builds Net on OneDnn with the formula's weights, runs the golden batch forward and backward in training
/// mode, then forward in evaluation mode where the file has eval_logits, and compares everything the golden
/// file holds. `gradient_bound` raises the gradients' bound where a
/// net is known to sit on a ReLU kink (see equivalence_resnet.cpp).
template <class Net>
void expect_equivalent_to_torchvision(const std::string& net, double gradient_bound = kTolerance) {
  const Golden g = Golden::load(net);
  const auto& entries = state_dict_entries<Net>();

  // The names: sinew's keys, dtypes and shapes equal PyTorch's state_dict, in its order.
  const auto& keys = g.at("keys");
  ASSERT_EQ(entries.size(), keys.size()) << net << ": sinew's state_dict has a different number of tensors";
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const auto& k = keys[i];
    std::vector<std::int64_t> shape;
    for (double d : Golden::numbers_of(k[2])) shape.push_back(std::int64_t(d));
    EXPECT_EQ(entries[i].key, k[0].get<std::string>()) << net << ": tensor " << i;
    EXPECT_EQ(entries[i].source == StateSource::batches_tracked ? "I64" : "F32", k[1].get<std::string>()) << entries[i].key;
    EXPECT_EQ(entries[i].shape(), shape) << entries[i].key;
  }

  backend::OneDnn::context ctx({.threads = 2});
  Model<Net, backend::OneDnn> model(ctx);
  for (const StateEntry& e : entries) {
    if (e.source == StateSource::batches_tracked) continue;
    auto flat = e.is_parameter() ? model.parameters() : model.buffers();
    formula_fill(e.key, e.shape(), flat.subspan(e.offset, e.size()));
  }

  const int batch = int(Golden::number(g.at("batch")));
  using In = typename Net::input_shape;
  std::vector<float> x(std::size_t(batch) * In::kSize);
  formula_fill("input", {batch, In::kChannels, In::kHeight, In::kWidth}, x);
  std::vector<std::int32_t> labels;
  for (double l : g.numbers("labels")) labels.push_back(std::int32_t(l));

  const auto logits = model.forward(x, batch);
  const LossValue loss = model.loss(labels);
  model.backward();

  Worst logit_error, grad_error, buffer_error;
  const std::vector<double> want_logits = g.numbers("logits");
  ASSERT_EQ(logits.size(), want_logits.size());
  double rms = 0;
  for (double v : want_logits) rms += v * v;
  rms = std::sqrt(rms / double(want_logits.size()));
  for (std::size_t i = 0; i < logits.size(); ++i)
    logit_error.add(logits[i], want_logits[i], rms, "logit " + std::to_string(i));
  logit_error.add(loss.loss, Golden::number(g.at("loss")), 0, "loss");

  double largest_grad = 0;
  for (const auto& [key, summary] : g.at("grads").items())
    largest_grad = std::max(largest_grad, Golden::number(summary.at("norm")));
  auto compare = [&](const io::detail::json& table, bool parameters, Worst& worst) {
    for (const auto& [key, summary] : table.items()) {
      const auto it = std::find_if(entries.begin(), entries.end(), [&](const StateEntry& e) { return e.key == key; });
      ASSERT_NE(it, entries.end()) << net << ": sinew has no tensor " << key;
      const std::span<const float> values =
          (parameters ? std::span<const float>(model.gradients()) : std::span<const float>(model.buffers()))
              .subspan(it->offset, it->size());
      double norm = 0;
      for (float v : values) norm += double(v) * v;
      norm = std::sqrt(norm);
      if (summary.contains("zero")) {
        // A bias before BatchNorm: its gradient is exactly 0, and float32 leaves rounding noise.
        EXPECT_LE(norm, 1e-5 * largest_grad) << net << ": " << key << " should have a zero gradient";
        continue;
      }
      const double want_norm = Golden::number(summary.at("norm"));
      worst.add(norm, want_norm, 0, key + " norm");
      const double floor = want_norm / std::sqrt(double(values.size()));
      const auto index = Golden::numbers_of(summary.at("index"));
      const auto value = Golden::numbers_of(summary.at("value"));
      for (std::size_t s = 0; s < index.size(); ++s)
        worst.add(values[std::size_t(index[s])], value[s], floor, key + "[" + std::to_string(std::size_t(index[s])) + "]");
    }
  };
  compare(g.at("grads"), true, grad_error);
  compare(g.at("buffers"), false, buffer_error);

  // The golden values are float64 results; where PyTorch's own float32 run is further from them than 1e-3
  // (an ill-conditioned problem, see make_golden.py), sinew may be as far as a few times that, no further.
  const auto& torch32 = g.at("torch_float32_error");
  auto bound = [&](std::string_view what) { return std::max(kTolerance, 4 * Golden::number(torch32.at(std::string(what)))); };
  std::printf("[ equivalence ] %s: max relative error (PyTorch float32's in brackets): logits+loss %.1e [%.1e] at %s, "
              "gradients %.1e [%.1e] at %s, running statistics %.1e [%.1e] at %s\n",
              net.c_str(), logit_error.error, Golden::number(torch32.at("logits")), logit_error.where.c_str(),
              grad_error.error, Golden::number(torch32.at("grads")), grad_error.where.c_str(), buffer_error.error,
              Golden::number(torch32.at("buffers")), buffer_error.where.c_str());
  EXPECT_LE(logit_error.error, bound("logits")) << net << ": logits differ from torchvision's at " << logit_error.where;
  EXPECT_LE(grad_error.error, std::max(gradient_bound, bound("grads"))) << net << ": gradients differ from torchvision's at " << grad_error.where;
  EXPECT_LE(buffer_error.error, bound("buffers"))
      << net << ": running statistics differ from torchvision's at " << buffer_error.where;
  // PyTorch counts one batch in every BatchNorm; sinew's step() is what it writes as num_batches_tracked.
  for (double n : g.numbers("num_batches_tracked")) EXPECT_EQ(double(model.step()), n);

  // Then evaluation mode on the same batch, with the running statistics that pass left (newer golden files).
  if (io::detail::member(g.root, "eval_logits")) {
    model.set_training(false);
    const auto eval_logits = model.forward(x, batch);
    const std::vector<double> want = g.numbers("eval_logits");
    ASSERT_EQ(eval_logits.size(), want.size());
    double eval_rms = 0;
    for (double v : want) eval_rms += v * v;
    eval_rms = std::sqrt(eval_rms / double(want.size()));
    Worst eval_error;
    for (std::size_t i = 0; i < want.size(); ++i)
      eval_error.add(eval_logits[i], want[i], eval_rms, "evaluation logit " + std::to_string(i));
    std::printf("[ equivalence ] %s: evaluation mode: max relative error %.1e [%.1e] at %s\n", net.c_str(),
                eval_error.error, Golden::number(torch32.at("eval_logits")), eval_error.where.c_str());
    EXPECT_LE(eval_error.error, bound("eval_logits")) << net << ": evaluation-mode logits differ from torchvision's at "
                                                      << eval_error.where;
  }
}

}  // namespace sinew::test
