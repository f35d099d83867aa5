// The trainer end to end on small generated problems: it must learn (so a broken backward fails CI),
// report its phases, and stop with a clear error on NaN loss or a loader of the wrong shape.
#include <gtest/gtest.h>

#include "../support/corners.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <functional>
#include <sstream>
#include <stdexcept>
#include <type_traits>
#include <string>
#include <vector>

#include "sinew/backend/onednn.hpp"
#include "sinew/data.hpp"
#include "sinew/comm/mpi.hpp"
#include "sinew/compress/fp16.hpp"
#include "sinew/metrics/progress.hpp"
#include "sinew/nets/lenet5.hpp"
#include "sinew/optim/adam.hpp"
#include "sinew/optim/schedule.hpp"
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

// A progress line and a program's own callback side by side: add_step_callback appends, in order; set_step_callback
// replaces every one; a callback that throws stops the ones after it for that step.
TEST(trainer, several_step_callbacks_run_in_the_order_added_and_set_replaces_them_all) {
  auto train = loader_for(corners(64, 1));  // 4 steps per epoch
  Trainer<SmallNet, backend::OneDnn> trainer({.threads = 1}, {.lr = 0.05f});
  std::ostringstream log;
  metrics::Progress progress(log, {.terminal = false, .every_seconds = 0, .epochs = 1});
  std::vector<std::string> order;
  trainer.add_step_callback(std::ref(progress));
  trainer.add_step_callback([&](const StepInfo& s) { order.push_back("first " + std::to_string(s.step)); });
  trainer.add_step_callback([&](const StepInfo& s) { order.push_back("second " + std::to_string(s.step)); });
  trainer.add_step_callback({});  // nothing
  trainer.train_epoch(train, 2);
  EXPECT_EQ(order, (std::vector<std::string>{"first 0", "second 0", "first 1", "second 1"}));
  EXPECT_NE(log.str().find("step 2/2"), std::string::npos) << log.str();
  trainer.set_step_callback([&](const StepInfo&) { order.push_back("only"); });
  trainer.train_epoch(train, 1);
  EXPECT_EQ(order.back(), "only");
  EXPECT_EQ(order.size(), 5u);
  trainer.set_step_callback([](const StepInfo&) { throw std::runtime_error("stop"); });
  trainer.add_step_callback([&](const StepInfo&) { order.push_back("after a throw"); });
  EXPECT_THROW(trainer.train_epoch(train), std::runtime_error);
  EXPECT_EQ(order.size(), 5u);
}

// strategy_spec.hpp's way to extend a strategy: derive, define the member, call the base's.
TEST(trainer, a_strategy_extended_by_deriving_is_the_one_the_trainer_calls) {
  using Extended = dist::example::counting_updates<dist::Local>;
  auto train = loader_for(corners(64, 1));
  Trainer<SmallNet, backend::OneDnn, Extended> trainer({.threads = 1}, {.lr = 0.05f}, Extended(dist::Local::options{}));
  trainer.train_epoch(train, 3);
  EXPECT_EQ(trainer.dist().updates, 3u);
}


// ---- dist::Local's update inside backward (options.update_in_backward) ----

/// max |a - b| / max |b|
double max_relative(std::span<const float> a, std::span<const float> b) {
  double diff = 0, largest = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    diff = std::max(diff, std::abs(double(a[i]) - double(b[i]))), largest = std::max(largest, std::abs(double(b[i])));
  return diff / largest;
}

// Two Dense layers large enough to update inside backward (backend/onednn/fused_dense_update.hpp: at least 2^20
// weights): the first computes no input gradient, the second does, with a fused Tanh and 130 rows (a block of 128
// and one of 2); the last Dense is small and updates after backward.
using WideNet = Sequential<Input<1, 12, 12>, Flatten, Dense<8192>, ReLU, Dense<130>, Tanh, Dense<2>>;
constexpr std::size_t kWideInBackward = (144 * 8192 + 8192) + (8192 * 130 + 130);

/// Trains WideNet two epochs with the update inside backward and after it (a learning rate that changes every
/// step, so an update inside backward at the last step's rate would show), `accumulate` micro-batches a step, and
/// returns max |difference| / max |parameter| between the two, after checking what each updated inside backward.
template <class O>
double trained_with_and_without_update_in_backward(typename O::options hyper, int accumulate) {
  const data::Dataset d = corners(96, 1);
  auto inside_data = test::corners_loader(d, {.batch_size = 8, .seed = 4});
  auto after_data = test::corners_loader(d, {.batch_size = 8, .seed = 4});
  using T = Trainer<WideNet, backend::OneDnn, dist::Local, Sync, O>;
  const TrainerOptions options{.threads = 1, .seed = 3, .accumulate = accumulate};
  T inside(options, hyper, dist::Local({.update_in_backward = true})), after(options, hyper);
  for (T* t : {&inside, &after}) t->set_schedule([](float lr, std::int64_t step) { return lr / float(step + 1); });
  EpochStats a, b;
  for (int e = 0; e < 2; ++e) a = inside.train_epoch(inside_data), b = after.train_epoch(after_data);
  EXPECT_EQ(inside.dist().updated_in_backward(), accumulate == 1 ? kWideInBackward : 0u)
      << "the two large Dense layers' weights and biases, unless gradients wait in a sum";
  EXPECT_EQ(after.dist().updated_in_backward(), 0u);
  EXPECT_GT(a.phases.update, 0);
  EXPECT_GT(max_relative(after.model().parameters(), T(options, hyper).model().parameters()), 1e-2)
      << "training must have moved the parameters for the comparison to mean much";
  return max_relative(inside.model().parameters(), after.model().parameters());
}

TEST(trainer, local_updates_large_dense_layers_inside_backward_as_after_it_to_rounding) {
  const double sgd = trained_with_and_without_update_in_backward<optim::Sgd>(
      {.lr = 0.02f, .momentum = 0.9f, .weight_decay = 1e-3f}, 1);
  EXPECT_LT(sgd, 1e-5) << "the input gradient sums over the blocks in another order: rounding, no more";
  const double adam = trained_with_and_without_update_in_backward<optim::Adam>({.lr = 1e-3f}, 1);
  EXPECT_LT(adam, 1e-4);
  std::printf("[ compare  ] update inside backward against after it, 24 steps: SGD %.3g, Adam %.3g\n", sgd, adam);
}

TEST(trainer, local_updates_after_backward_when_micro_batches_are_summed) {
  const double r = trained_with_and_without_update_in_backward<optim::Sgd>({.lr = 0.02f, .momentum = 0.9f}, 2);
  EXPECT_EQ(r, 0.0) << "with the gradients summed the step is the update after backward, bit for bit";
}


// ---- gradient accumulation (TrainerOptions::accumulate) ----


/// k micro-batches of 8 against one batch of 8k, on the same shuffled order (the permutation depends on the seed
/// and epoch only, so the batch of 8k is the concatenation of the k micro-batches): two epochs of `samples`.
void expect_k_micro_batches_equal_one_batch_of_k_times_b(std::size_t samples, int k) {
  const data::Dataset d = corners(samples, 1);
  auto micro = test::corners_loader(d, {.batch_size = 8, .seed = 4});
  auto whole = test::corners_loader(d, {.batch_size = 8 * k, .seed = 4});
  Trainer<SmallNet, backend::OneDnn> accumulating({.threads = 1, .seed = 3, .accumulate = k},
                                                  {.lr = 0.05f, .momentum = 0.9f});
  Trainer<SmallNet, backend::OneDnn> big({.threads = 1, .seed = 3}, {.lr = 0.05f, .momentum = 0.9f});
  std::vector<StepInfo> seen;
  accumulating.set_step_callback([&](const StepInfo& s) { seen.push_back(s); });
  for (int e = 0; e < 2; ++e) {
    const EpochStats a = accumulating.train_epoch(micro), b = big.train_epoch(whole);
    EXPECT_EQ(a.steps, b.steps) << "a step is an update of k micro-batches";
    EXPECT_EQ(a.samples, samples);
    EXPECT_NEAR(a.loss, b.loss, 1e-5 * b.loss) << "the loss over every micro-batch";
    EXPECT_NEAR(a.accuracy, b.accuracy, 1.5 / double(samples)) << "at most one image on the fence";
  }
  EXPECT_EQ(accumulating.steps_done(), big.steps_done());
  const double r = max_relative(accumulating.model().parameters(), big.model().parameters());
  EXPECT_LT(r, 1e-5) << k << " micro-batches of 8 must update as one batch of " << 8 * k;
  std::printf("[ compare  ] accumulate %d x 8 against batch %d, %zu samples: max |diff| / max |param| %.3g\n", k,
              8 * k, samples, r);
  const double moved = max_relative(big.model().parameters(),
                                    Trainer<SmallNet, backend::OneDnn>({.seed = 3}).model().parameters());
  EXPECT_GT(moved, 1e-2) << "training must have moved the parameters for the comparison to mean much";
  ASSERT_FALSE(seen.empty());
  EXPECT_EQ(seen[0].samples, std::size_t(8 * k));
  EXPECT_EQ(seen[0].step, 0u);
  EXPECT_EQ(seen[1].step, 1u);
  const std::size_t batches = (samples + 7) / 8;
  EXPECT_EQ(seen[0].epoch_steps, (batches + std::size_t(k) - 1) / std::size_t(k));
}

TEST(trainer, accumulate_3_micro_batches_of_8_equal_one_batch_of_24) {
  expect_k_micro_batches_equal_one_batch_of_k_times_b(96, 3);  // 12 micro-batches, 4 steps an epoch
}

// 76 samples: 9 batches of 8 and one of 4. With k = 4 the last step takes the 2 batches left (8 + 4 images),
// each weighted by its images: the batches of 32, 32 and 12 a loader of 32 gives.
TEST(trainer, accumulate_leaves_the_last_step_the_batches_left_weighted_by_their_images) {
  expect_k_micro_batches_equal_one_batch_of_k_times_b(76, 4);
}

TEST(trainer, accumulate_counts_steps_as_updates_in_max_steps_and_train_steps) {
  auto train = loader_for(corners(64, 1));  // 4 batches of 16: 2 steps of 2
  using Counting = dist::example::counting_updates<dist::Local>;
  Trainer<SmallNet, backend::OneDnn, Counting> trainer({.threads = 1, .accumulate = 2}, {.lr = 0.05f},
                                                       Counting(dist::Local::options{}));
  const EpochStats one = trainer.train_epoch(train, 1);
  EXPECT_EQ(one.steps, 1u);
  EXPECT_EQ(one.samples, 32u);
  const std::vector<EpochStats> epochs = trainer.train_steps(train, 3);  // 2 + 1
  ASSERT_EQ(epochs.size(), 2u);
  EXPECT_EQ(epochs[0].steps, 2u);
  EXPECT_EQ(epochs[0].samples, 64u);
  EXPECT_EQ(epochs[1].steps, 1u);
  EXPECT_EQ(trainer.steps_done(), 4);
  EXPECT_EQ(trainer.dist().updates, 4u) << "one update per step";
}

// The strategy hears one backward per step, the last micro-batch's, with every layer's hook.
TEST(trainer, accumulate_calls_the_overlap_hooks_in_the_last_micro_batch_only) {
  struct counting_begins : dist::example::counting_hooks {
    void backward_begins(std::span<float> g) {
      counting_hooks::backward_begins(g);
      ++begins;
    }
    int begins = 0;
  };
  auto train = loader_for(corners(80, 1));  // 5 batches: steps of 3 and 2
  Trainer<SmallNet, backend::OneDnn, counting_begins> trainer({.threads = 1, .accumulate = 3}, {.lr = 0.05f});
  EXPECT_EQ(trainer.train_epoch(train).steps, 2u);
  EXPECT_EQ(trainer.dist().begins, 2);
  EXPECT_EQ(trainer.dist().ready, 3) << "one call per layer with parameters";
  EXPECT_EQ(trainer.dist().lowest, 0u);
}

TEST(trainer, accumulate_below_1_is_refused_with_a_sentence) {
  for (const int k : {0, -2}) {
    try {
      Trainer<SmallNet, backend::OneDnn> trainer({.threads = 1, .accumulate = k});
      FAIL() << "accumulate " << k << " must be refused";
    } catch (const error& e) {
      EXPECT_NE(std::string(e.what()).find("trainer: TrainerOptions::accumulate is " + std::to_string(k) +
                                           "; it counts the batches whose gradients make one update, so it is at "
                                           "least 1"),
                std::string::npos)
          << e.what();
    }
  }
}

// What batch normalisation sees: each micro-batch's own statistics, its running statistics updated once per
// micro-batch (as PyTorch does), not once per step over the k x B images. With a learning rate of 0 nothing
// else changes, so k = 2 of 8 updates them as 4 steps of 8 do, and not as 2 steps of 16.
TEST(trainer, accumulate_batch_norm_normalises_each_micro_batch_and_updates_its_statistics_each) {
  using BnNet = Sequential<Input<1, 12, 12>, Conv2d<4, 3, 1, 1, false>, BatchNorm2d, ReLU, MaxPool<2>, Flatten,
                           Dense<2>>;
  const data::Dataset d = corners(32, 9);
  auto eights = test::corners_loader(d, {.batch_size = 8, .seed = 4});
  auto sixteens = test::corners_loader(d, {.batch_size = 16, .seed = 4});
  const auto buffers_after = [&](int k, data::CachedLoader& loader) {
    Trainer<BnNet, backend::OneDnn> t({.threads = 1, .seed = 2, .accumulate = k}, {.lr = 0.0f});
    EXPECT_EQ(t.train_epoch(loader).steps, 32u / std::size_t(loader.batch_size() * k));
    return std::vector<float>(t.model().buffers().begin(), t.model().buffers().end());
  };
  const std::vector<float> accumulated = buffers_after(2, eights), micro = buffers_after(1, eights),
                           big = buffers_after(1, sixteens);
  EXPECT_EQ(accumulated, micro) << "the running statistics take each micro-batch's, one update each";
  EXPECT_GT(max_relative(accumulated, big), 1e-4) << "not the statistics of the 16-image step";
}

struct stop_here {};

// The step callback runs after a step's update, so a checkpoint never holds half a sum of gradients: saved
// mid-epoch, the resumed run ends bit for bit where the run that was not stopped ends. Another accumulate is
// refused: it would group the batches into other steps.
TEST(trainer, accumulate_saved_mid_epoch_resumes_exactly_and_another_accumulate_is_refused) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("sinew-test-trainer-accumulate-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  auto train = loader_for(corners(96, 1));  // 6 batches of 16: 3 steps of 2 an epoch
  using T = Trainer<BnDropNet, backend::OneDnn>;
  const TrainerOptions options{.threads = 1, .seed = 2, .accumulate = 2};
  const optim::Sgd::options sgd{.lr = 0.05f, .momentum = 0.9f};
  T whole(options, sgd);
  whole.train_steps(train, 6);
  {
    T stopped(options, sgd);
    stopped.set_step_callback([&](const StepInfo& s) {
      if (s.steps_done == 4) {  // epoch 1, after its first step
        stopped.save_checkpoint(dir);
        throw stop_here{};
      }
    });
    EXPECT_THROW(stopped.train_steps(train, 6), stop_here);
  }
  EXPECT_EQ(io::read_manifest(dir).accumulate, 2u);
  EXPECT_EQ(io::read_manifest(dir).batches_done, 2u) << "the loader's batches, two per step";
  T resumed(options, sgd);
  EXPECT_EQ(resumed.resume(dir), "");
  EXPECT_EQ(resumed.train_epoch(train).steps, 2u);
  EXPECT_EQ(resumed.steps_done(), whole.steps_done());
  const auto same = [](std::span<const float> a, std::span<const float> b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
  };
  EXPECT_TRUE(same(resumed.model().parameters(), whole.model().parameters()));
  EXPECT_TRUE(same(resumed.model().buffers(), whole.model().buffers()));

  T other({.threads = 1, .seed = 2, .accumulate = 1}, sgd);
  try {
    other.resume(dir);
    ADD_FAILURE() << "a resume with another accumulate must be refused";
  } catch (const error& e) {
    EXPECT_NE(std::string(e.what()).find("was written with TrainerOptions::accumulate 2; this trainer has 1, which "
                                         "would group the batches into other steps (build it with accumulate 2)"),
              std::string::npos)
        << e.what();
  }
  fs::remove_all(dir);
}

}  // namespace

// The names a configuration gives its policies (README, the guide) beside `using namespace sinew;` at global scope,
// where a concept of the same name would make each use ambiguous: the concepts are BackendPolicy, StrategyPolicy,
// ... (issue 36's newcomer met "template argument 2 is invalid" for `using Backend = backend::OneDnn;`).
using namespace sinew;
using Network = SmallNet;
using Backend = backend::OneDnn;
using Strategy = dist::Local;
using SyncMode = Sync;
using Optimizer = optim::Sgd;
using Loader = data::CachedLoader;
using Compressor = compress::Fp16;
using Communicator = comm::Mpi;
using Schedule = optim::WarmupCosine;
using Activation = ReLU;
static_assert(std::is_same_v<Trainer<Network, Backend, Strategy, SyncMode, Optimizer, Loader>::backend, Backend>);
static_assert(BackendPolicy<Backend> && StrategyPolicy<Strategy> && SyncModePolicy<SyncMode> &&
              OptimizerPolicy<Optimizer> && NetworkPolicy<Network> && data::LoaderPolicy<Loader> &&
              CompressorPolicy<Compressor> && CommunicatorPolicy<Communicator> && ActivationPolicy<Activation>);
