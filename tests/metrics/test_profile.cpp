// Per-operator profiling: one entry per lowered node, its time split into operator kinds named as seed 000's
// figures (convolution, convolution_backward_data/_weights, tanh_backward, ...), on both backends; the
// Trainer adds weights_update; NoProfile takes no storage.
#include <gtest/gtest.h>

#include "../support/corners.hpp"

#include <cmath>
#include <fstream>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "sinew/backend/eigen.hpp"
#include "sinew/backend/onednn.hpp"
#include "sinew/data.hpp"
#include "sinew/metrics/profile.hpp"
#include "sinew/model.hpp"
#include "sinew/nets/lenet5.hpp"
#include "sinew/trainer.hpp"

namespace {
using namespace sinew;
using metrics::Direction;
using metrics::OpKind;
using Net = nets::LeNet5<Input<3, 32, 32>>;

template <class M>
void train_steps(M& model, int steps, int batch = 4) {
  std::vector<float> x(std::size_t(batch) * M::input_shape::kSize);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = float(i % 17) * 0.05f - 0.4f;
  std::vector<std::int32_t> y(static_cast<std::size_t>(batch));
  for (int i = 0; i < batch; ++i) y[std::size_t(i)] = i % 3;
  for (int i = 0; i < steps; ++i) {
    model.forward(x, batch);
    model.loss(y);
    model.backward();
  }
}

std::size_t calls(const metrics::OperatorProfile::Entry& e, OpKind k) { return e.kinds[std::size_t(k)].calls; }

/// Every node's split sums to its whole time, less at most the probe's clock reads. The split never exceeds the
/// whole; that it covers the whole is a timing and is checked over fresh runs of `run` (a callable that trains a new
/// model and returns its profile's nodes): a preemption between two parts of a node adds to the node's whole and to
/// no part, once, while a part of the op left untimed falls short in every run.
template <class Run>
void expect_split_matches_whole(const metrics::OperatorProfile& p, Run run) {
  using Nodes = std::vector<metrics::OperatorProfile::Entry>;
  const auto short_of_whole = [](const Nodes& nodes) {
    std::vector<std::string> shorts;
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      const auto& e = nodes[i];
      for (const Direction d : {Direction::forward, Direction::backward}) {
        const double whole = d == Direction::forward ? e.forward_seconds : e.backward_seconds;
        const std::size_t n = d == Direction::forward ? e.forward_calls : e.backward_calls;
        const double split = e.split_seconds(d);
        EXPECT_LE(split, whole * (1 + 1e-9) + 1e-12) << e.name;
        // Two clock reads per part are the whole difference; allow 5% and 5 us per call on a busy machine.
        if (split < 0.95 * whole - 5e-6 * double(n))
          shorts.push_back("node " + std::to_string(i) + " (" + e.name + ")" +
                           (d == Direction::forward ? " forward: " : " backward: ") + std::to_string(split) + " s of " +
                           std::to_string(whole) + " s");
      }
    }
    return shorts;
  };
  auto shorts = short_of_whole(p.nodes());
  for (int again = 0; again < 4 && !shorts.empty(); ++again) {
    const auto next = short_of_whole(run());
    std::vector<std::string> still;  // short in every run so far: "node i (name) direction: figures"
    for (const auto& s : shorts)
      for (const auto& t : next)
        if (s.substr(0, s.find(':')) == t.substr(0, t.find(':'))) still.push_back(t);
    shorts = std::move(still);
  }
  for (const auto& s : shorts) ADD_FAILURE() << "the split falls short of the whole in five runs: " << s;
}

template <class B>
void check_lenet5_kinds() {
  typename B::context ctx({.threads = 2});
  Model<Net, B, metrics::OperatorProfile> model(ctx);
  train_steps(model, 3);
  const auto& p = model.profile();
  EXPECT_EQ(p.steps(), 3u);
  const auto& nodes = p.nodes();
  // Each convolution, its tanh and the pool after them are one node (layers/detail/pooled_conv.hpp).
  ASSERT_EQ(nodes.size(), 6u);
  EXPECT_EQ(nodes[0].name, "conv2d+tanh+avg_pool");
  EXPECT_EQ(nodes[1].name, "conv2d+tanh+avg_pool");
  EXPECT_EQ(nodes[2].name, "flatten");
  EXPECT_EQ(nodes[5].name, "dense");
  for (const auto& n : nodes) {
    EXPECT_EQ(n.forward_calls, 3u) << n.name;
    EXPECT_GT(n.forward_seconds, 0) << n.name;
  }
  // The first convolution computes its weight gradient but no input gradient; the second computes both. Each
  // node's pool reports as pooling, whether it runs in the convolution's op (OneDnn) or its own (Eigen).
  EXPECT_EQ(calls(nodes[0], OpKind::convolution), 3u);
  EXPECT_EQ(calls(nodes[0], OpKind::tanh), 3u);
  EXPECT_EQ(calls(nodes[0], OpKind::tanh_backward), 3u);
  EXPECT_EQ(calls(nodes[0], OpKind::convolution_backward_weights), 3u);
  EXPECT_EQ(calls(nodes[0], OpKind::convolution_backward_data), 0u);
  EXPECT_EQ(calls(nodes[1], OpKind::convolution_backward_data), 3u);
  EXPECT_GT(nodes[1].kinds[std::size_t(OpKind::convolution_backward_data)].seconds, 0);
  EXPECT_GT(nodes[1].kinds[std::size_t(OpKind::convolution_backward_weights)].seconds, 0);
  for (const std::size_t n : {0, 1}) {
    EXPECT_EQ(calls(nodes[n], OpKind::pooling), 3u);
    EXPECT_EQ(calls(nodes[n], OpKind::pooling_backward), 3u);
  }
  EXPECT_EQ(calls(nodes[3], OpKind::fully_connected_backward_data), 3u);
  EXPECT_EQ(calls(nodes[3], OpKind::fully_connected_backward_weights), 3u);
  // The last Dense has no activation: nothing of it is reported as one.
  EXPECT_EQ(calls(nodes[5], OpKind::tanh), 0u);
  EXPECT_EQ(calls(nodes[5], OpKind::tanh_backward), 0u);
  EXPECT_EQ(calls(nodes[5], OpKind::fully_connected), 3u);

  const auto kinds = p.by_kind();
  for (const char* k : {"convolution", "convolution_backward_data", "convolution_backward_weights", "tanh",
                        "tanh_backward", "pooling", "pooling_backward", "flatten", "fully_connected",
                        "fully_connected_backward_data", "fully_connected_backward_weights", "loss"})
    EXPECT_TRUE(kinds.count(k)) << B::kName << " lacks " << k;
  EXPECT_FALSE(kinds.count("relu")) << "LeNet-5 has no ReLU";
  EXPECT_FALSE(kinds.count("weights_update")) << "the Model alone runs no optimizer";
  EXPECT_EQ(p.total(OpKind::loss).calls, 3u);
  EXPECT_DOUBLE_EQ(kinds.at("convolution"), nodes[0].kinds[0].seconds + nodes[1].kinds[0].seconds);
  expect_split_matches_whole(p, [&] {
    Model<Net, B, metrics::OperatorProfile> again(ctx);
    train_steps(again, 3);
    return again.profile().nodes();
  });
}

TEST(operator_profile, lenet5_onednn_splits_each_node_into_named_kinds) { check_lenet5_kinds<backend::OneDnn>(); }
TEST(operator_profile, lenet5_eigen_splits_each_node_into_named_kinds) { check_lenet5_kinds<backend::Eigen>(); }

TEST(operator_profile, residual_block_reports_its_branch_ops_and_the_sum) {
  using ResNet = Sequential<Input<3, 8, 8>, Conv2d<4, 3, 1, 1, false>, BatchNorm2d, ReLU,
                            Residual<Chain<Conv2d<8, 3, 2, 1, false>, BatchNorm2d, ReLU, Conv2d<8, 3, 1, 1, false>,
                                           BatchNorm2d>,
                                     ProjectIfNeeded<8, 2>>,
                            ReLU, GlobalAvgPool, Flatten, Dense<3>>;
  backend::OneDnn::context ctx({.threads = 2});
  Model<ResNet, backend::OneDnn, metrics::OperatorProfile> model(ctx);
  train_steps(model, 2);
  const auto& nodes = model.profile().nodes();
  ASSERT_EQ(nodes.size(), 7u);
  EXPECT_EQ(nodes[2].name, "residual");
  // Three convolutions (two in the main branch, the 1x1 projection) and three batch norms per step.
  EXPECT_EQ(calls(nodes[2], OpKind::convolution), 6u);
  EXPECT_EQ(calls(nodes[2], OpKind::batch_norm), 6u);
  EXPECT_EQ(calls(nodes[2], OpKind::batch_norm_backward), 6u);
  EXPECT_EQ(calls(nodes[2], OpKind::convolution_backward_data), 6u);
  EXPECT_EQ(calls(nodes[2], OpKind::add), 2u);
  EXPECT_EQ(calls(nodes[2], OpKind::add_backward), 2u);
  EXPECT_EQ(calls(nodes[1], OpKind::batch_norm), 2u);  // a fused ReLU runs inside oneDNN's batch norm
  EXPECT_EQ(calls(nodes[3], OpKind::relu), 2u);
  EXPECT_EQ(calls(nodes[3], OpKind::relu_backward), 2u);
  EXPECT_EQ(calls(nodes[4], OpKind::pooling_backward), 2u);
  expect_split_matches_whole(model.profile(), [&] {
    Model<ResNet, backend::OneDnn, metrics::OperatorProfile> again(ctx);
    train_steps(again, 2);
    return again.profile().nodes();
  });
}

// Convolutions on images smaller than their kernel run as one inner product over a matrix they expand and fold
// (backend/onednn/small_conv2d.hpp): the folding after backward data is backward weights' work again, and the
// profile still counts each kind once a call.
TEST(operator_profile, a_convolution_returning_to_a_kind_counts_one_call_of_it) {
  using Small = Sequential<Input<4, 2, 2>, Conv2d<8, 3, 1, 1, false>, ReLU, Conv2d<6, 3, 1, 1>, Flatten, Dense<3>>;
  static_assert(backend::onednn::conv_is_small_image(2, 2, 2, 2, 3));
  backend::OneDnn::context ctx({.threads = 2});
  Model<Small, backend::OneDnn, metrics::OperatorProfile> model(ctx);
  train_steps(model, 3);
  int convolutions = 0;
  for (const auto& n : model.profile().nodes()) {
    if (calls(n, OpKind::convolution) == 0) continue;
    ++convolutions;
    EXPECT_EQ(calls(n, OpKind::convolution), 3u) << n.name;
    EXPECT_EQ(calls(n, OpKind::convolution_backward_weights), 3u) << n.name;
  }
  EXPECT_EQ(convolutions, 2);
  EXPECT_EQ(calls(model.profile().nodes()[1], OpKind::convolution_backward_data), 3u);
  expect_split_matches_whole(model.profile(), [&] {
    Model<Small, backend::OneDnn, metrics::OperatorProfile> again(ctx);
    train_steps(again, 3);
    return again.profile().nodes();
  });

  // The probe alone: resume() adds time to a kind without a call; begin() of a kind begun before is a second
  // call of it (a composite node runs several convolutions).
  metrics::OperatorProfile p;
  p.resize({"op"});
  {
    auto probe = p.start(0);
    probe.begin(OpKind::convolution_backward_weights);
    probe.begin(OpKind::convolution_backward_data);
    probe.resume(OpKind::convolution_backward_weights);
    probe.begin(OpKind::convolution_backward_data);
    probe.end(OpKind::other);
  }
  EXPECT_EQ(calls(p.nodes()[0], OpKind::convolution_backward_weights), 1u);
  EXPECT_EQ(calls(p.nodes()[0], OpKind::convolution_backward_data), 2u);
  EXPECT_EQ(calls(p.nodes()[0], OpKind::other), 0u);
  EXPECT_GT(p.nodes()[0].kinds[std::size_t(OpKind::convolution_backward_weights)].seconds, 0);
}

// A layer of a kind of its own, as a new layer header declares one: it computes itself (layer_kind::plain) and
// names a profile kind that the profile's table lacks.
struct twice_kind : layer_kind::plain {};
struct Twice {
  static constexpr std::string_view kName = "twice";
  using kind = twice_kind;
  static constexpr std::string_view kProfile = "twice";
  template <FeatureShape In>
  struct at {
    using output = In;
    static constexpr std::size_t kWeights = 0, kBias = 0;
    static void forward(const PlainPass& p) {
      for (std::size_t i = 0; i < std::size_t(p.batch) * In::kSize; ++i) p.dst[i] = 2 * p.src[i];
    }
    static void backward(const PlainPass& p) {
      if (p.diff_src)
        for (std::size_t i = 0; i < std::size_t(p.batch) * In::kSize; ++i) p.diff_src[i] = 2 * p.diff_dst[i];
    }
  };
};

TEST(operator_profile, a_kind_the_table_lacks_is_declared_once_under_its_own_name) {
  const OpKind forward = metrics::profile_kind("declared_here", Direction::forward);
  const OpKind backward = metrics::profile_kind("declared_here", Direction::backward);
  EXPECT_GE(std::size_t(forward), metrics::kNamedOpKinds);
  EXPECT_EQ(metrics::op_kind_name(forward), "declared_here");
  EXPECT_EQ(metrics::op_kind_name(backward), "declared_here_backward");
  EXPECT_FALSE(metrics::is_backward(forward));
  EXPECT_TRUE(metrics::is_backward(backward));
  EXPECT_EQ(metrics::profile_kind("declared_here", Direction::forward), forward);
  EXPECT_EQ(metrics::declare_kind("declared_here_backward"), backward);
  // A name of the table stays the table's kind.
  EXPECT_EQ(metrics::profile_kind("pooling", Direction::backward), OpKind::pooling_backward);
  EXPECT_EQ(metrics::declare_kind("relu"), OpKind::relu);
}

template <class B>
void check_declared_layer() {
  // After a 16-channel convolution oneDNN's output is blocked and Eigen's NHWC: the plain op converts both ways.
  using With = Sequential<Input<2, 3, 3>, Conv2d<16, 1>, Twice>;
  using Without = Sequential<Input<2, 3, 3>, Conv2d<16, 1>>;
  typename B::context ctx({.threads = 2});
  Model<With, B, metrics::OperatorProfile> with(ctx, {.seed = 3, .input_gradient = true});
  Model<Without, B> without(ctx, {.seed = 3, .input_gradient = true});
  std::vector<float> x(2 * With::input_shape::kSize);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = float(i % 7) * 0.3f - 1.0f;
  const auto out = with.forward(x, 2), out0 = without.forward(x, 2);
  const std::vector<float> y(out.begin(), out.end()), y0(out0.begin(), out0.end());
  ASSERT_EQ(y.size(), y0.size());
  for (std::size_t i = 0; i < y.size(); ++i) ASSERT_FLOAT_EQ(y[i], 2 * y0[i]) << i;
  const std::vector<float> r(y.size(), 0.5f), r2(y.size(), 1.0f);
  with.backward(r);
  without.backward(r2);
  const std::vector<float> dx = with.input_gradient(), dx0 = without.input_gradient();
  for (std::size_t i = 0; i < dx.size(); ++i) ASSERT_NEAR(dx[i], dx0[i], 1e-5f * (1 + std::fabs(dx0[i]))) << i;

  const auto& nodes = with.profile().nodes();
  ASSERT_EQ(nodes.size(), 2u);
  EXPECT_EQ(nodes[1].name, "twice");
  const auto kinds = with.profile().by_kind();
  EXPECT_TRUE(kinds.count("twice")) << B::kName;
  EXPECT_TRUE(kinds.count("twice_backward")) << B::kName;
  EXPECT_EQ(calls(nodes[1], metrics::profile_kind("twice", Direction::backward)), 1u);
  EXPECT_EQ(with.profile().total(OpKind::other).calls, 0u);
  expect_split_matches_whole(with.profile(), [&] {
    Model<With, B, metrics::OperatorProfile> again(ctx, {.seed = 3, .input_gradient = true});
    again.forward(x, 2);
    again.backward(r);
    return again.profile().nodes();
  });
}

TEST(operator_profile, onednn_runs_and_profiles_a_layer_that_declares_its_own_kind) {
  check_declared_layer<backend::OneDnn>();
}
TEST(operator_profile, eigen_runs_and_profiles_a_layer_that_declares_its_own_kind) {
  check_declared_layer<backend::Eigen>();
}

TEST(operator_profile, evaluation_passes_are_not_recorded) {
  backend::OneDnn::context ctx({.threads = 1});
  Model<Net, backend::OneDnn, metrics::OperatorProfile> model(ctx);
  train_steps(model, 2);
  model.set_training(false);
  std::vector<float> x(2 * Net::input_shape::kSize, 0.1f);
  std::vector<std::int32_t> y{0, 1};
  model.forward(x, 2);
  model.loss(y);
  EXPECT_EQ(model.profile().steps(), 2u);
  EXPECT_EQ(model.profile().nodes()[0].forward_calls, 2u);
  EXPECT_EQ(model.profile().total(OpKind::loss).calls, 2u);
}

TEST(operator_profile, records_evaluation_passes_instead_when_asked) {
  backend::OneDnn::context ctx({.threads = 1});
  Model<Net, backend::OneDnn, metrics::OperatorProfile> model(ctx);
  model.profile().record(metrics::OperatorProfile::Passes::evaluation);
  EXPECT_FALSE(model.profile().records(true));
  EXPECT_TRUE(model.profile().records(false));
  train_steps(model, 2);  // not recorded now
  EXPECT_EQ(model.profile().steps(), 0u);
  EXPECT_EQ(model.profile().nodes()[0].forward_calls, 0u);
  EXPECT_EQ(model.profile().total(OpKind::loss).calls, 0u);
  model.set_training(false);
  std::vector<float> x(2 * Net::input_shape::kSize, 0.1f);
  std::vector<std::int32_t> y{0, 1};
  for (int pass = 0; pass < 3; ++pass) model.forward(x, 2);
  model.loss(y);  // a validation loss belongs to the evaluation it follows
  const auto& p = model.profile();
  EXPECT_EQ(p.steps(), 3u);
  for (const auto& node : p.nodes()) {
    EXPECT_EQ(node.forward_calls, 3u) << node.name;
    EXPECT_GT(node.forward_seconds, 0.0) << node.name;
    EXPECT_EQ(node.backward_calls, 0u) << node.name;
  }
  EXPECT_EQ(p.total(OpKind::convolution).calls, 6u);  // LeNet-5's two convolutions, three passes
  EXPECT_EQ(p.total(OpKind::convolution_backward_data).calls + p.total(OpKind::convolution_backward_weights).calls,
            0u);
  EXPECT_EQ(p.total(OpKind::loss).calls, 1u);
  EXPECT_EQ(p.to_json()["passes"].get<std::string>(), "evaluation");
  // Back to training steps: the evaluation passes stay until reset(), and training adds to them.
  model.profile().record(metrics::OperatorProfile::Passes::training);
  model.set_training(true);
  train_steps(model, 1);
  EXPECT_EQ(p.steps(), 4u);
  EXPECT_EQ(p.nodes()[0].backward_calls, 1u);
}

TEST(operator_profile, trainer_adds_the_optimizer_step_as_weights_update) {
  using Small = Sequential<Input<1, 12, 12>, Conv2d<4, 3>, ReLU, MaxPool<2>, Flatten, Dense<2>>;
  using Train = Trainer<Small, backend::OneDnn, dist::Local, Sync, optim::Sgd, data::CachedLoader,
                        metrics::OperatorProfile>;
  data::LoaderOptions o;
  o.batch_size = 16;
  data::CachedLoader loader(sinew::test::corners(64, 1), o);
  Train trainer({.threads = 1}, {.lr = 0.05f});
  const auto stats = trainer.train_epoch(loader);
  const auto& p = trainer.model().profile();
  EXPECT_EQ(p.steps(), stats.steps);
  EXPECT_EQ(p.total(OpKind::weights_update).calls, stats.steps);
  EXPECT_NEAR(p.total(OpKind::weights_update).seconds, stats.phases.update, 1e-12);
  // A ReLU after a convolution is a oneDNN post-op: its forward is inside "convolution", its backward apart.
  EXPECT_EQ(p.total(OpKind::relu).calls, 0u);
  EXPECT_EQ(p.total(OpKind::relu_backward).calls, stats.steps);
  // Recording evaluation passes, a training epoch adds nothing: no node, no update.
  trainer.model().profile().reset();
  trainer.model().profile().record(metrics::OperatorProfile::Passes::evaluation);
  (void)trainer.train_epoch(loader);
  EXPECT_EQ(p.steps(), 0u);
  EXPECT_EQ(p.total(OpKind::weights_update).calls, 0u);
  EXPECT_EQ(p.total(OpKind::relu_backward).calls, 0u);
}

TEST(operator_profile, writes_kinds_and_nodes_as_json_and_csv) {
  backend::Eigen::context ctx({.threads = 1});
  Model<Net, backend::Eigen, metrics::OperatorProfile> model(ctx);
  train_steps(model, 2);
  const auto& p = model.profile();
  const std::string json = p.to_json().dump();  // compact
  EXPECT_NE(json.find("\"steps\":2"), std::string::npos) << json;
  EXPECT_NE(json.find("{\"kind\":\"convolution_backward_data\",\"seconds_per_step\":"), std::string::npos) << json;
  EXPECT_NE(json.find("{\"node\":0,\"operator\":\"conv2d+tanh+avg_pool\""), std::string::npos) << json;

  const auto read = [](const std::string& path) {
    std::ifstream f(path);
    std::stringstream text;
    text << f.rdbuf();
    return text.str();
  };
  const std::string nodes_csv = ::testing::TempDir() + "/profile_nodes.csv";
  const std::string kinds_csv = ::testing::TempDir() + "/profile_kinds.csv";
  p.write_csv(nodes_csv);
  p.write_kinds_csv(kinds_csv);
  const std::string nodes = read(nodes_csv), kinds = read(kinds_csv);
  EXPECT_EQ(nodes.rfind("node,operator,kind,seconds_per_step,calls_per_step\n", 0), 0u) << nodes;
  EXPECT_NE(nodes.find("\n1,conv2d+tanh+avg_pool,convolution_backward_data,"), std::string::npos) << nodes;
  EXPECT_NE(nodes.find("\n,step,loss,"), std::string::npos) << nodes;
  EXPECT_EQ(kinds.rfind("kind,seconds_per_step,calls_per_step,share\n", 0), 0u) << kinds;
  EXPECT_NE(kinds.find("\ntanh_backward,"), std::string::npos) << kinds;
  // calls_per_step of the second-layer convolution's backward data: one node, once per step.
  EXPECT_NE(kinds.find("\nconvolution_backward_data,"), std::string::npos) << kinds;

  model.profile().reset();
  EXPECT_EQ(model.profile().nodes()[0].forward_calls, 0u);
  EXPECT_EQ(model.profile().total(OpKind::convolution).calls, 0u);
  EXPECT_EQ(model.profile().steps(), 0u);
}

/// A profile policy of 64 bytes that measures nothing: the Model must grow by exactly its size.
struct SixtyFourBytes : metrics::NoProfile {
  char bytes[64];
};

TEST(operator_profile, off_by_default_and_then_takes_no_storage) {
  static_assert(!metrics::NoProfile::kEnabled && !metrics::NoProbe::kEnabled);
  static_assert(std::is_empty_v<metrics::NoProfile>);
  static_assert(std::is_empty_v<metrics::NoProbe>);
  static_assert(std::is_same_v<Model<Net, backend::OneDnn>, Model<Net, backend::OneDnn, metrics::NoProfile>>);
  // With [[no_unique_address]], NoProfile occupies no bytes; a one-byte member would have cost 8 (padding).
  EXPECT_EQ(sizeof(Model<Net, backend::OneDnn, SixtyFourBytes>) - sizeof(Model<Net, backend::OneDnn>), 64u);
  EXPECT_EQ(sizeof(Model<Net, backend::Eigen, SixtyFourBytes>) - sizeof(Model<Net, backend::Eigen>), 64u);
}

}  // namespace
