// dist::with_defaults<S, M>: every optional member of the strategy contract is S's where S has it and the
// documented default where it has not; the constants say which optional parts S has.
#include <gtest/gtest.h>

#include <span>
#include <vector>

#include "sinew/comm/mpi.hpp"
#include "sinew/dist/local.hpp"
#include "sinew/dist/mpi_allreduce.hpp"
#include "sinew/dist/parameter_server.hpp"
#include "sinew/dist/ring_allreduce.hpp"
#include "sinew/dist/strategy_spec.hpp"
#include "sinew/dist/with_defaults.hpp"

namespace {
using namespace sinew;

// A strategy with only the required members (strategy_spec.hpp's example), and one with some optional members.
using bare = dist::example::one_process;
struct voting : bare {
  bool all_agree(bool ok) { return ++votes, !ok; }  // inverted, so that the test sees whose answer it was
  void synchronize_buffers(std::span<float> b) { b[0] = 42.0f; }
  NamedState checkpoint_state(std::span<float> p) { return {{{"own", p}}, {{"n", 3}}, {}}; }
  void restore_checkpoint_state(const NamedState& s) { restored = s.count("n"); }
  std::span<float> gradient_storage(std::size_t floats) { return std::span<float>(storage).first(floats); }
  int votes = 0;
  std::uint64_t restored = 0;
  std::vector<float> storage = std::vector<float>(100);
};

TEST(with_defaults, a_strategy_without_optional_members_gets_the_documented_defaults) {
  using D = dist::with_defaults<bare, Sync>;
  static_assert(!D::kOverlaps && !D::kDeferredAgreement && !D::kAgrees && !D::kServes && !D::kOptimizerOnServers &&
                !D::kUnevenEpochs && !D::kRelaysPreemption);
  D d{bare{}};
  EXPECT_TRUE(d.all_agree(true));
  EXPECT_FALSE(d.all_agree(false));
  EXPECT_TRUE(d.agreed()) << "without the deferred agreement every step is applied";
  d.request_preemption(true);
  EXPECT_FALSE(d.preempting()) << "without the relay nothing is relayed: the trainer agrees between steps";
  std::vector<float> p(4, 1.0f);
  metrics::PhaseSeconds phases;
  EXPECT_EQ(d.serve(p, phases), 0u);
  d.synchronize_buffers(p);
  EXPECT_EQ(p[0], 1.0f) << "without the buffer hook the statistics stay this rank's";
  EXPECT_TRUE(d.checkpoint_state(p).empty());
  EXPECT_EQ(d.checkpoint_group().world_size, 1);
  EXPECT_EQ(d.clock_offset(), (std::pair<std::int64_t, std::int64_t>{0, 0}));
  EXPECT_TRUE(d.gradient_storage(64).empty()) << "without the hook the model keeps its own gradients";
}

TEST(with_defaults, a_strategy_s_own_optional_members_are_the_ones_called) {
  dist::with_defaults<voting, Sync> d{voting{}};
  EXPECT_FALSE(d.all_agree(true));
  EXPECT_EQ(d.get().votes, 1);
  std::vector<float> p(4, 1.0f);
  d.synchronize_buffers(p);
  EXPECT_EQ(p[0], 42.0f);
  NamedState state = d.checkpoint_state(p);
  ASSERT_EQ(state.tensors.size(), 1u);
  EXPECT_EQ(state.tensors[0].second.data(), p.data());
  d.restore_checkpoint_state(state);
  EXPECT_EQ(d.get().restored, 3u);
  const std::span<float> storage = d.gradient_storage(64);
  EXPECT_EQ(storage.data(), d.get().storage.data());
  EXPECT_EQ(storage.size(), 64u);
}

TEST(with_defaults, the_constants_name_what_sinew_s_strategies_have) {
  using Ring = dist::with_defaults<dist::RingAllReduce<comm::Mpi>, Sync>;
  static_assert(Ring::kOverlaps && Ring::kDeferredAgreement && Ring::kAgrees && !Ring::kServes &&
                !Ring::kRelaysPreemption);
  static_assert(req::has_gradient_storage<dist::RingAllReduce<comm::Mpi>> &&
                !req::has_gradient_storage<dist::MpiAllReduce<comm::Mpi>> &&
                !req::has_gradient_storage<dist::ParameterServer<comm::Mpi, 1>>);
  using Ps = dist::with_defaults<dist::ParameterServer<comm::Mpi, 1>, Async>;
  static_assert(Ps::kServes && Ps::kOptimizerOnServers && Ps::kUnevenEpochs && !Ps::kOverlaps &&
                !Ps::kRelaysPreemption);  // its workers are at other steps: preempted between epochs
  using PsSync = dist::with_defaults<dist::ParameterServer<comm::Mpi, 1>, Sync>;
  static_assert(!PsSync::kUnevenEpochs && PsSync::kRelaysPreemption);
  using L = dist::with_defaults<dist::Local, Sync>;
  static_assert(!L::kServes && !L::kAgrees);
  SUCCEED();
}

}  // namespace
