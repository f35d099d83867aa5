// An evaluation-mode forward reuses what the ops derived from the weights at the plan's last evaluation-mode
// forward (backend/generic/weight_cache.hpp, Model::parameters_changed): these cases check that it never reuses a
// stale copy. Every change of the parameters a user can make (the writable parameters(), initialize(), a training
// step, a span written through after parameters_changed()) must show in the next evaluation's output, on every
// plan (batch size), for each kind of op that derives weights: oneDNN's reordered convolution, its small-image and
// thin convolutions, a grouped and a depthwise convolution, the inner product; Eigen's HWIO, grouped and
// depthwise copies. The reference is a second model built on the same parameters, which derives afresh.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "sinew/backend/eigen.hpp"
#include "sinew/backend/onednn.hpp"
#include "sinew/model.hpp"
#include "sinew/nets/sequential.hpp"
#include "sinew/optim.hpp"
#include "sinew/tensor/buffer.hpp"

namespace {
using namespace sinew;

// One node of each op that derives its weights: on OneDnn a thin convolution (3 -> 8 channels, stride 1), the
// general one (stride 2, 8 -> 32), a residual block (its branches get the mode through Chain), a depthwise and
// a grouped convolution, a small-image convolution (2x2 image, 3x3 kernel) and the inner product.
using Net = Sequential<Input<3, 8, 8>,                                                    //
                       Conv2d<8, 3, 1, 1>, ReLU,                                          // thin
                       Conv2d<32, 3, 2, 1, false>, BatchNorm2d, ReLU,                     // general, 4x4
                       Residual<Chain<Conv2d<32, 3, 1, 1, false>, BatchNorm2d, ReLU,      //
                                      DepthwiseConv2d<32, 3, 1, 1>,                       // depthwise
                                      Conv2d<32, 3, 1, 1, false, 1, 4>, BatchNorm2d>,     // grouped
                                ProjectIfNeeded<32, 1>>,                                  //
                       ReLU, MaxPool<2>,                                                  // 2x2
                       Conv2d<16, 3, 1, 1>, ReLU,                                         // small image
                       Flatten, Dense<10>>;

template <class B>
class weight_cache : public ::testing::Test {};
using Backends = ::testing::Types<backend::OneDnn, backend::Eigen>;
TYPED_TEST_SUITE(weight_cache, Backends);

std::vector<float> images(int batch) {
  std::vector<float> x(std::size_t(batch) * Net::input_shape::kSize);
  Rng rng(7);
  for (float& v : x) v = rng.normal();
  return x;
}

// The output of an evaluation-mode forward on a fresh model holding `model`'s parameters and buffers: ops that
// derive their weights for the first time.
template <class B, class M>
std::vector<float> fresh_output(typename B::context& ctx, const M& model, int batch) {
  Model<Net, B> fresh(ctx);
  std::ranges::copy(model.parameters(), fresh.parameters().begin());
  std::ranges::copy(model.buffers(), fresh.buffers().begin());
  fresh.set_training(false);
  const auto out = fresh.forward(images(batch), batch);
  return {out.begin(), out.end()};
}

template <class M>
std::vector<float> evaluate(M& model, int batch) {
  model.set_training(false);
  const auto out = model.forward(images(batch), batch);
  return {out.begin(), out.end()};
}

void expect_near(const std::vector<float>& a, const std::vector<float>& b, const char* what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (std::size_t i = 0; i < a.size(); ++i) ASSERT_NEAR(a[i], b[i], 1e-4f * (1 + std::abs(b[i]))) << what << " at " << i;
}

bool differ(const std::vector<float>& a, const std::vector<float>& b) {
  for (std::size_t i = 0; i < a.size(); ++i)
    if (std::abs(a[i] - b[i]) > 1e-3f * (1 + std::abs(b[i]))) return true;
  return false;
}

// Every parameter scaled (a change that every op's output sees).
void scale(std::span<float> p, float by) {
  for (float& v : p) v *= by;
}

TYPED_TEST(weight_cache, evaluation_sees_every_change_of_the_parameters) {
  using B = TypeParam;
  typename B::context ctx({.threads = 2});
  Model<Net, B> model(ctx, {.seed = 3});
  const auto first = evaluate(model, 2);
  expect_near(first, fresh_output<B>(ctx, model, 2), "first evaluation");
  expect_near(evaluate(model, 2), first, "the same parameters again (the reused copy)");

  scale(model.parameters(), 1.5f);  // the writable span: a change
  const auto scaled = evaluate(model, 2);
  ASSERT_TRUE(differ(scaled, first)) << "scaling every weight must change the output";
  expect_near(scaled, fresh_output<B>(ctx, model, 2), "after writing through parameters()");

  // A span taken earlier, written through: parameters_changed() tells the model.
  const std::span<float> kept = model.parameters();
  evaluate(model, 2);
  scale(kept, 0.5f);
  model.parameters_changed();
  expect_near(evaluate(model, 2), fresh_output<B>(ctx, model, 2), "after parameters_changed()");

  model.initialize(11);
  expect_near(evaluate(model, 2), fresh_output<B>(ctx, model, 2), "after initialize()");
}

// Each batch size has a plan of its own, with its own ops: a change seen by one plan's evaluation must still
// reach another plan that evaluated before it.
TYPED_TEST(weight_cache, every_plan_sees_a_change_made_while_another_ran) {
  using B = TypeParam;
  typename B::context ctx({.threads = 2});
  Model<Net, B> model(ctx, {.seed = 4});
  evaluate(model, 1);
  evaluate(model, 3);
  scale(model.parameters(), 2.0f);
  evaluate(model, 3);  // plan 3 derives the new weights; plan 1 still holds the old ones
  expect_near(evaluate(model, 1), fresh_output<B>(ctx, model, 1), "batch 1 after batch 3 saw the change");
}

// A training step between two evaluations: the optimizer's update shows in the next evaluation.
TYPED_TEST(weight_cache, evaluation_after_a_training_step_sees_its_update) {
  using B = TypeParam;
  typename B::context ctx({.threads = 2});
  Model<Net, B> model(ctx, {.seed = 5});
  optim::Sgd sgd({.lr = 0.5f}, model.parameters().size());
  const auto before = evaluate(model, 2);
  model.set_training(true);
  model.forward(images(2), 2);
  model.loss(std::vector<std::int32_t>{1, 7});
  model.backward();
  sgd.step(model.parameters(), model.gradients());
  const auto after = evaluate(model, 2);
  ASSERT_TRUE(differ(after, before)) << "a step with lr 0.5 must change the output";
  expect_near(after, fresh_output<B>(ctx, model, 2), "after a training step");
}

}  // namespace

namespace {
// The op's side alone: the first forward derives, a forward reuses only when set_mode said so just before it.
TEST(weight_cache_op_side, derives_first_then_only_when_not_told_unchanged) {
  sinew::backend::weight_cache cache;
  const sinew::ForwardMode unchanged{.training = false, .seed = 0, .weights_unchanged = true};
  cache.set_mode(unchanged);
  EXPECT_TRUE(cache.take()) << "the first forward has nothing to reuse";
  cache.set_mode(unchanged);
  EXPECT_FALSE(cache.take());
  EXPECT_TRUE(cache.take()) << "a forward without set_mode derives";
  cache.set_mode(sinew::ForwardMode{.training = false, .seed = 0, .weights_unchanged = false});
  EXPECT_TRUE(cache.take());
}
// The gradients kept in memory a strategy gives (Model::use_gradient_storage; the Trainer hands it the ring's
// shared window): backward writes there the very floats it writes to the model's own buffer, the plans set up
// before are set up again, and a wrong size or alignment fails with a sentence. Empty storage: the model's own
// buffer again, the gradients kept.
TEST(model_gradient_storage, backward_writes_the_same_gradients_into_memory_the_caller_gives) {
  using M = Model<Net, backend::OneDnn>;
  backend::OneDnn::context ctx({.threads = 2});
  M own(ctx, {.seed = 6}), given(ctx, {.seed = 6});
  const std::vector<std::int32_t> labels = {1, 7};
  given.forward(images(2), 2);  // a plan before the switch, bound to the model's own buffer
  AlignedBuffer<float> storage(M::kParamSpan + 16);
  storage.fill(-1.0f);
  given.use_gradient_storage(storage.span().first(M::kParamSpan));
  EXPECT_EQ(given.gradients().data(), storage.data());
  EXPECT_EQ(given.gradients()[0], 0.0f) << "the gradients so far (none yet: zeros) are copied there";
  for (M* m : {&own, &given}) {
    m->forward(images(2), 2);
    m->loss(labels);
    m->backward();
  }
  const std::span<const float> a = own.gradients(), b = given.gradients();
  ASSERT_EQ(a.size(), b.size());
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0)
      << "backward wrote other gradients into the given memory";
  EXPECT_TRUE(std::ranges::any_of(b, [](float g) { return g != 0.0f; }));

  std::string wrong_size, misaligned;
  try {
    given.use_gradient_storage(storage.span().first(M::kParamSpan - 1));
  } catch (const shape_error& e) {
    wrong_size = e.what();
  }
  try {
    given.use_gradient_storage(storage.span().subspan(1, M::kParamSpan));
  } catch (const error& e) {
    misaligned = e.what();
  }
  EXPECT_NE(wrong_size.find("floats for " + std::to_string(M::kParamSpan) + " gradients"), std::string::npos)
      << wrong_size;
  EXPECT_NE(misaligned.find("64-byte aligned"), std::string::npos) << misaligned;
  EXPECT_EQ(given.gradients().data(), storage.data()) << "a refused storage changes nothing";

  given.use_gradient_storage({});
  EXPECT_NE(given.gradients().data(), storage.data());
  EXPECT_EQ(std::memcmp(a.data(), given.gradients().data(), a.size() * sizeof(float)), 0)
      << "going back to the model's own buffer lost the gradients";
  std::string stale;
  try {
    given.backward();
  } catch (const error& e) {
    stale = e.what();
  }
  EXPECT_NE(stale.find("needs a forward() first"), std::string::npos)
      << "the plans bound to the old gradients must be gone: " << stale;
}

}  // namespace
