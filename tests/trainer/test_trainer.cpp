// The trainer end to end on small generated problems: it must learn (so a broken backward fails CI),
// report its phases, and stop with a clear error on NaN loss or a loader of the wrong shape.
#include <gtest/gtest.h>

#include "../support/corners.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "sinew/backend/onednn.hpp"
#include "sinew/data.hpp"
#include "sinew/nets/lenet5.hpp"
#include "sinew/optim/adam.hpp"
#include "sinew/trainer.hpp"

namespace {
using namespace sinew;

using sinew::test::corners;

using SmallNet = Sequential<Input<1, 12, 12>, Conv2d<4, 3>, ReLU, MaxPool<2>, Flatten, Dense<16>, Tanh, Dense<2>>;

data::CachedLoader loader_for(const data::Dataset& d, bool shuffle = true) {
  return test::corners_loader(d, {.batch_size = 16, .shuffle = shuffle, .seed = 4});
}

TEST(trainer, sgd_learns_generated_corners_to_a_low_loss) {
  auto train = loader_for(corners(512, 1));
  auto test = loader_for(corners(256, 2), false);
  Trainer<SmallNet, backend::OneDnn> trainer({.threads = 1, .seed = 3, .warmup_steps = 2},
                                             {.lr = 0.05f, .momentum = 0.9f});
  const double initial = trainer.evaluate(test).loss;
  EpochStats last;
  for (int e = 0; e < 4; ++e) last = trainer.train_epoch(train);
  const EvalStats eval = trainer.evaluate(test);
  EXPECT_GT(initial, 0.5);
  EXPECT_LT(eval.loss, 0.1) << "a broken backward pass cannot get the loss this low";
  EXPECT_GT(eval.accuracy, 0.97);
  EXPECT_EQ(last.samples, 512u);
  EXPECT_EQ(last.steps, 32u);
  EXPECT_GT(last.images_per_second, 0);
  EXPECT_GT(last.phases.forward, 0);
  EXPECT_GT(last.phases.backward, 0);
  EXPECT_GT(last.phases.update, 0);
  EXPECT_NEAR(last.phases.total(), last.seconds, 0.5 * last.seconds + 0.05);
}

TEST(trainer, adam_learns_too) {
  auto train = loader_for(corners(256, 5));
  Trainer<SmallNet, backend::OneDnn, dist::Local, Sync, optim::Adam> trainer({.threads = 1}, {.lr = 3e-3f});
  double first = trainer.train_epoch(train).loss, last = first;
  for (int e = 0; e < 3; ++e) last = trainer.train_epoch(train).loss;
  EXPECT_LT(last, 0.5 * first);
}

TEST(trainer, nan_loss_stops_before_touching_the_parameters) {
  auto d = corners(64, 7);
  auto train = loader_for(d);
  Trainer<SmallNet, backend::OneDnn> trainer({.threads = 1}, {.lr = 0.01f});
  trainer.train_epoch(train);
  // A NaN in the last layer's bias makes a logit, and so the loss, NaN (a NaN weight before a ReLU would not:
  // max(NaN, 0) is 0 in SIMD code).
  using last_node = std::tuple_element_t<SmallNet::nodes<true>::kSize - 1, as_tuple_t<SmallNet::nodes<true>>>;
  auto params = trainer.model().parameters();
  params[last_node::kParamOffset + last_node::kParams - 1] = std::nanf("");
  const std::vector<float> before(params.begin(), params.end());
  try {
    trainer.train_epoch(train);
    FAIL() << "a NaN loss must throw";
  } catch (const training_error& e) {
    EXPECT_NE(std::string(e.what()).find("the loss is NaN at epoch 1, step 0"), std::string::npos) << e.what();
  }
  const auto after = trainer.model().parameters();
  ASSERT_EQ(std::memcmp(before.data(), after.data(), before.size() * sizeof(float)), 0) << "a parameter changed";
}

TEST(trainer, loader_of_the_wrong_shape_is_a_shape_error) {
  data::LoaderOptions o;
  o.batch_size = 8;
  data::CachedLoader wrong(corners(32, 1), o);  // 12x12 images
  Trainer<nets::LeNet5<>, backend::OneDnn> trainer({.threads = 1});
  try {
    trainer.train_epoch(wrong);
    FAIL() << "expected a shape_error";
  } catch (const shape_error& e) {
    EXPECT_NE(std::string(e.what()).find("1x12x12 images but the network takes 1x32x32"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("pad with LoaderOptions::pad_to_height/width"), std::string::npos) << e.what();
  }
  // Images larger than the input: padding cannot help, so the sentence says to resize.
  Trainer<Sequential<Input<1, 8, 8>, Flatten, Dense<2>>, backend::OneDnn> small({.threads = 1});
  try {
    small.train_epoch(wrong);
    FAIL() << "expected a shape_error";
  } catch (const shape_error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("1x12x12 images but the network takes 1x8x8 (shrink the images with "
                     "LoaderOptions::resize_to_height/width"), std::string::npos) << m;
    EXPECT_EQ(m.find("pad_to"), std::string::npos) << m;
  }
}

using BnDropNet = Sequential<Input<1, 12, 12>, Conv2d<4, 3, 1, 1, false>, BatchNorm2d, ReLU, MaxPool<2>, Flatten,
                            Dropout<20>, Dense<2>>;

TEST(trainer, evaluate_runs_in_eval_mode_and_train_epoch_in_training_mode) {
  auto train = loader_for(corners(256, 5));
  auto test = loader_for(corners(128, 6), false);
  Trainer<BnDropNet, backend::OneDnn> trainer({.threads = 1, .seed = 2}, {.lr = 0.05f, .momentum = 0.9f});
  const auto buffers = trainer.model().buffers();
  const std::vector<float> initial(buffers.begin(), buffers.end());
  const double first = trainer.evaluate(test).loss;
  EXPECT_FALSE(trainer.model().training());
  // Training mode would draw new dropout masks and update the running statistics.
  EXPECT_EQ(trainer.evaluate(test).loss, first);
  EXPECT_TRUE(std::equal(initial.begin(), initial.end(), buffers.begin())) << "evaluate() changed a buffer";
  for (int e = 0; e < 3; ++e) trainer.train_epoch(train);
  EXPECT_TRUE(trainer.model().training());
  EXPECT_FALSE(std::equal(initial.begin(), initial.end(), buffers.begin())) << "training kept no running statistics";
  const EvalStats eval = trainer.evaluate(test);
  EXPECT_LT(eval.loss, 0.3);
  EXPECT_GT(eval.accuracy, 0.95) << "the running statistics do not describe the trained network";
}

TEST(trainer, learning_rate_schedule_is_applied_each_step) {
  auto train = loader_for(corners(64, 1));
  Trainer<SmallNet, backend::OneDnn> trainer({.threads = 1}, {.lr = 0.1f});
  std::vector<std::int64_t> seen;
  trainer.set_schedule([&](float lr, std::int64_t step) {
    seen.push_back(step);
    return lr / float(step + 1);
  });
  trainer.train_epoch(train);
  ASSERT_EQ(seen.size(), 4u);
  EXPECT_EQ(seen.back(), 3);
  EXPECT_FLOAT_EQ(trainer.optimizer().learning_rate(), 0.1f / 4);
}

TEST(trainer, trains_a_given_number_of_steps_and_calls_back_after_each) {
  auto train = loader_for(corners(64, 1));  // 4 steps per epoch
  Trainer<SmallNet, backend::OneDnn> trainer({.threads = 1}, {.lr = 0.05f});
  std::vector<StepInfo> seen;
  trainer.set_step_callback([&](const StepInfo& s) { seen.push_back(s); });
  EXPECT_EQ(trainer.train_epoch(train, 3).steps, 3u);
  const std::vector<EpochStats> epochs = trainer.train_steps(train, 6);  // 4 + 2
  ASSERT_EQ(epochs.size(), 2u);
  EXPECT_EQ(epochs[0].steps, 4u);
  EXPECT_EQ(epochs[1].steps, 2u);
  EXPECT_EQ(epochs[1].epoch, 2);
  EXPECT_EQ(trainer.steps_done(), 9);
  ASSERT_EQ(seen.size(), 9u);
  EXPECT_EQ(seen[2].epoch, 0);
  EXPECT_EQ(seen[2].step, 2u);
  EXPECT_EQ(seen[3].epoch, 1);
  EXPECT_EQ(seen[3].step, 0u);
  EXPECT_EQ(seen[8].steps_done, 9);
  EXPECT_EQ(seen[8].samples, 16u);
  EXPECT_TRUE(std::isfinite(seen[8].loss) && seen[8].loss > 0);
  EXPECT_GT(seen[8].phases.forward, 0.0);

  // A callback that throws stops training after the step it saw.
  trainer.set_step_callback([](const StepInfo& s) {
    if (s.step == 1) throw std::runtime_error("stop here");
  });
  EXPECT_THROW(trainer.train_epoch(train), std::runtime_error);
  EXPECT_EQ(trainer.steps_done(), 11);
}

// strategy_spec.hpp's way to extend a strategy: derive, define the member, call the base's.
TEST(trainer, a_strategy_extended_by_deriving_is_the_one_the_trainer_calls) {
  using Extended = dist::example::counting_updates<dist::Local>;
  auto train = loader_for(corners(64, 1));
  Trainer<SmallNet, backend::OneDnn, Extended> trainer({.threads = 1}, {.lr = 0.05f}, Extended(dist::Local::options{}));
  trainer.train_epoch(train, 3);
  EXPECT_EQ(trainer.dist().updates, 3u);
}

}  // namespace
