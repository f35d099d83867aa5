// "No allocation inside the training step": after the first step has built its plan, forward, loss,
// backward and the optimizer update must not call operator new from sinew's code. Each allocation is
// attributed by its call stack: oneDNN 2.6 itself allocates inside dnnl_primitive_execute (its execution
// context holds an std::unordered_map of the arguments), which no caller can avoid; those are counted apart.
#include <dlfcn.h>
#include <execinfo.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <new>
#include <vector>

#include "sinew/backend/onednn.hpp"
#include "sinew/metrics/timeline.hpp"
#include "sinew/model.hpp"
#include "sinew/nets/lenet5.hpp"
#include "sinew/optim.hpp"

namespace {
std::atomic<long> allocations{0};  // outside oneDNN
std::atomic<long> onednn_allocations{0};
thread_local bool inside_hook = false;

bool called_from_onednn() {
  void* frames[24];
  const int n = backtrace(frames, 24);
  for (int i = 1; i < n; ++i) {
    Dl_info info;
    if (dladdr(frames[i], &info) && info.dli_fname && std::strstr(info.dli_fname, "libdnnl")) return true;
  }
  return false;
}
}  // namespace

void* operator new(std::size_t n) {
  if (!inside_hook) {
    inside_hook = true;
    ++(called_from_onednn() ? onednn_allocations : allocations);
    inside_hook = false;
  }
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
// operator new above allocates with malloc, so free is the matching release (GCC cannot see the pairing).
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }

namespace {
using namespace sinew;

template <class Optimizer, class Net = nets::LeNet5<Input<3, 32, 32>>>
long allocations_in_steady_state_steps(typename Optimizer::options o) {
  backend::OneDnn::context ctx({.threads = 2});
  Model<Net, backend::OneDnn> model(ctx);
  Optimizer opt(o, model.parameters().size());
  std::vector<float> x(8 * Model<Net, backend::OneDnn>::input_shape::kSize, 0.25f);
  std::vector<std::int32_t> y{0, 1, 2, 3, 4, 5, 6, 7};
  auto step = [&] {
    model.forward(x, 8);
    model.loss(y);
    model.backward();
    opt.step(model.parameters(), model.gradients());
  };
  step();  // builds the plan: allocation is expected here
  step();
  const long before = allocations.load(), before_onednn = onednn_allocations.load();
  for (int i = 0; i < 5; ++i) step();
  const long ours = allocations.load() - before, theirs = onednn_allocations.load() - before_onednn;
  ::testing::Test::RecordProperty("onednn_allocations_per_step", int(theirs / 5));
  return ours;
}

TEST(model, lenet5_sgd_step_allocates_nothing_after_setup) {
  EXPECT_EQ(allocations_in_steady_state_steps<optim::Sgd>({.lr = 0.01f, .momentum = 0.9f}), 0);
}

TEST(model, lenet5_adam_step_allocates_nothing_after_setup) {
  EXPECT_EQ(allocations_in_steady_state_steps<optim::Adam>({}), 0);
}

// A depthwise 3x3 layer on a 2x2 image takes sinew's own weight-gradient pass (depthwise_backward_weights.hpp),
// whose per-thread sums must not come from the heap either.
TEST(model, depthwise_sgd_step_allocates_nothing_after_setup) {
  using Net = Sequential<Input<200, 2, 2>, DepthwiseConv2d<200, 3, 1, 1, true>, Flatten, Dense<8>>;
  EXPECT_EQ((allocations_in_steady_state_steps<optim::Sgd, Net>({.lr = 0.01f, .momentum = 0.9f})), 0);
}

TEST(model, lenet5_traced_steps_allocate_nothing_and_record_every_node_each_way) {
  backend::OneDnn::context ctx({.threads = 1});
  using Lenet = Model<nets::LeNet5<Input<3, 32, 32>>, backend::OneDnn>;
  Lenet model(ctx);
  std::vector<float> x(8 * 3 * 32 * 32, 0.25f);
  std::vector<std::int32_t> y{0, 1, 2, 3, 4, 5, 6, 7};
  auto step = [&] {
    model.forward(x, 8);
    model.loss(y);
    model.backward();
  };
  step();  // builds the plan
  metrics::Timeline timeline(1000);  // reserved here: recording appends within it
  model.set_timeline(&timeline);
  const long before = allocations.load();
  for (int i = 0; i < 5; ++i) step();
  EXPECT_EQ(allocations.load() - before, 0);
  ASSERT_EQ(timeline.events().size(), 5 * 2 * Lenet::kOps);
  for (const metrics::TraceEvent& e : timeline.events()) EXPECT_LE(e.begin_ns, e.end_ns);
  // Off again: nothing more is recorded.
  model.set_timeline(nullptr);
  step();
  EXPECT_EQ(timeline.events().size(), 5 * 2 * Lenet::kOps);
  // Full: further events are counted, not stored.
  metrics::Timeline small(3);
  model.set_timeline(&small);
  step();
  EXPECT_EQ(small.events().size(), 3u);
  EXPECT_EQ(small.dropped(), 2 * Lenet::kOps - 3);
}

TEST(model, a_new_batch_size_builds_a_plan_and_so_allocates) {
  // The counter works: building a plan for another batch size does allocate.
  backend::OneDnn::context ctx({.threads = 1});
  Model<nets::LeNet5<Input<3, 32, 32>>, backend::OneDnn> model(ctx);
  std::vector<float> x(3 * 3 * 32 * 32, 0.25f);
  const long before = allocations.load();
  model.forward(x, 3);
  EXPECT_GT(allocations.load() - before, 0);
}

}  // namespace
