// Per-operator profiling: one entry per lowered node, named after the layer and its fused activation,
// with time and calls per direction; the trainer passes the policy through.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <vector>

#include "sinew/backend/onednn.hpp"
#include "sinew/metrics/profile.hpp"
#include "sinew/model.hpp"
#include "sinew/nets/lenet5.hpp"

namespace {
using namespace sinew;
using Net = nets::LeNet5<Input<3, 32, 32>>;

TEST(operator_profile, lenet5_has_one_named_entry_per_node_with_calls_and_time) {
  backend::OneDnn::context ctx({.threads = 1});
  Model<Net, backend::OneDnn, metrics::OperatorProfile> model(ctx);
  std::vector<float> x(4 * 3 * 32 * 32, 0.1f);
  std::vector<std::int32_t> y{1, 2, 3, 4};
  for (int i = 0; i < 3; ++i) {
    model.forward(x, 4);
    model.loss(y);
    model.backward();
  }
  const auto& nodes = model.profile().nodes();
  ASSERT_EQ(nodes.size(), 8u);
  EXPECT_EQ(nodes[0].name, "conv2d+tanh");
  EXPECT_EQ(nodes[1].name, "avg_pool");
  EXPECT_EQ(nodes[4].name, "flatten");
  EXPECT_EQ(nodes[7].name, "dense");
  for (const auto& n : nodes) {
    EXPECT_EQ(n.forward_calls, 3u) << n.name;
    EXPECT_GT(n.forward_seconds, 0) << n.name;
  }
  // The first convolution needs no input gradient but still runs backward (its weight gradient).
  EXPECT_EQ(nodes[0].backward_calls, 3u);
  EXPECT_GT(nodes[0].backward_seconds, 0);
  const auto kinds = model.profile().by_kind();
  EXPECT_DOUBLE_EQ(kinds.at("conv2d+tanh/forward"), nodes[0].forward_seconds + nodes[2].forward_seconds);

  const std::string path = ::testing::TempDir() + "/profile.csv";
  model.profile().write_csv(path);
  std::ifstream f(path);
  std::stringstream text;
  text << f.rdbuf();
  EXPECT_NE(text.str().find("0,conv2d+tanh,forward,"), std::string::npos) << text.str();
  EXPECT_NE(model.profile().to_json().dump(0).find("{\"node\":0,\"operator\":\"conv2d+tanh\""), std::string::npos);
  model.profile().reset();
  EXPECT_EQ(model.profile().nodes()[0].forward_calls, 0u);
}

TEST(operator_profile, off_by_default_and_then_empty) {
  static_assert(!metrics::NoProfile::kEnabled);
  static_assert(std::is_empty_v<metrics::NoProfile>);
}

}  // namespace
