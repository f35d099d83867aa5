// The all-reduce strategies (dist/ring_allreduce.hpp's RingAllReduce, and dist/mpi_allreduce.hpp's MpiAllReduce,
// which shares every case of the typed suite `allreduce_strategy`) under mpiexec with 1, 2 or 3 ranks. The ring
// collective they call is tested in tests/comm/test_ring_allreduce.cpp, the bucket plan in test_buckets.cpp.
//
// Each rank's gradient is a deterministic function of (rank, index) (tests/support/rank_inputs.hpp), so every
// rank computes the mean of all ranks' gradients itself.
// Tests make every collective call before their first ASSERT, so a failing rank cannot leave the others waiting.
#include <gtest/gtest.h>

#include <boost/mpi/communicator.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <thread>
#include <string>
#include <vector>

#include "../support/rank_inputs.hpp"
#include "sinew/comm/mpi.hpp"
#include "sinew/dist/mpi_allreduce.hpp"
#include "sinew/dist/ring_allreduce.hpp"

namespace {
using namespace sinew;
using comm::Mpi;
using test::integer_input;
using test::world_size;

// The strategies, on a hand-made parameter vector and the example optimizer (plain descent).
template <class S>
class allreduce_strategy : public ::testing::Test {};
using strategies = ::testing::Types<dist::RingAllReduce<Mpi>, dist::MpiAllReduce<Mpi>>;
class strategy_names {  // typed tests are named before MPI starts, so without the number of ranks
 public:
  template <class S>
  static std::string GetName(int) {
    return std::string(S::kName);
  }
};
TYPED_TEST_SUITE(allreduce_strategy, strategies, strategy_names);

TYPED_TEST(allreduce_strategy, start_gives_every_rank_rank_0s_parameters) {
  TypeParam strategy;
  optim::example::descent sgd({.lr = 0.5f}, 3);
  const int r = strategy.rank();
  std::vector<float> params = {float(r) + 1, 2, float(-r)};
  strategy.template start<Sync>(params, sgd);
  EXPECT_EQ(params, (std::vector<float>{1, 2, 0}));
  EXPECT_EQ(strategy.world_size(), world_size());
  EXPECT_EQ(strategy.workers(), strategy.world_size());
  EXPECT_EQ(strategy.worker_index(), r);
  EXPECT_TRUE(strategy.is_worker());
}

TYPED_TEST(allreduce_strategy, update_applies_the_mean_gradient_on_every_rank) {
  TypeParam strategy;
  optim::example::descent sgd({.lr = 0.5f}, 3);
  const int p = strategy.world_size(), r = strategy.rank();
  std::vector<float> params = {1, 2, 3}, grads = {float(r), float(2 * r), 4};
  metrics::PhaseSeconds phases;
  strategy.template update<Sync>(params, grads, sgd, phases);
  const float mean_rank = float(p - 1) / 2;
  EXPECT_FLOAT_EQ(params[0], 1 - 0.5f * mean_rank);
  EXPECT_FLOAT_EQ(params[1], 2 - 0.5f * 2 * mean_rank);
  EXPECT_FLOAT_EQ(params[2], 3 - 0.5f * 4);
  EXPECT_GT(phases.comm + phases.update, 0.0);
  EXPECT_EQ(phases.forward + phases.backward + phases.load, 0.0);
}

template <class S>
std::string start_error(S strategy, std::size_t parameters) {
  std::vector<float> params(parameters, 1.0f);
  optim::example::descent sgd({}, parameters);
  try {
    strategy.template start<Sync>(params, sgd);
  } catch (const comm_error& e) {
    return e.what();
  }
  return "no comm_error";
}

TYPED_TEST(allreduce_strategy, start_names_the_first_rank_with_another_configuration_text) {
  const int r = boost::mpi::communicator().rank(), p = world_size();
  // Ranks 1 and up differ from rank 0: every rank must name rank 1.
  const std::string error = start_error(TypeParam({.configuration = r == 0 ? "batch=16" : "batch=32"}), 10);
  if (p == 1) {
    EXPECT_EQ(error, "no comm_error");
  } else {
    EXPECT_NE(error.find(std::string(TypeParam::kName == "ring_allreduce" ? "dist::RingAllReduce"
                                                                            : "dist::MpiAllReduce") +
                         ": rank 1 disagrees with rank 0 on the configuration text (hash "),
              std::string::npos)
        << error;
  }
}

TYPED_TEST(allreduce_strategy, start_names_the_last_rank_when_only_it_has_another_parameter_count) {
  const int r = boost::mpi::communicator().rank(), p = world_size();
  const std::string error = start_error(TypeParam(), r == p - 1 && p > 1 ? 11 : 10);
  if (p == 1) {
    EXPECT_EQ(error, "no comm_error");
  } else {
    EXPECT_NE(error.find(": rank " + std::to_string(p - 1) + " disagrees with rank 0 on the parameter count (11 vs 10)"),
              std::string::npos)
        << error;
  }
}

TEST(ring_allreduce_strategy, start_names_a_rank_with_another_chunk_size) {
  const int r = boost::mpi::communicator().rank(), p = world_size();
  dist::RingAllReduce<Mpi>::options o;
  o.chunk_floats = r == 0 ? 64 : 128;
  const std::string error = start_error(dist::RingAllReduce<Mpi>(o), 10);
  if (p > 1) {
    EXPECT_NE(error.find("rank 1 disagrees with rank 0 on the ring chunk size (128 vs 64)"), std::string::npos)
        << error;
  }
}


// The strategies' hooks on a hand-made gradient of three layers, as the trainer calls them.
template <class S>
typename S::options bucketed(std::size_t bucket_bytes, bool overlap) {
  typename S::options o;
  o.bucket_bytes = bucket_bytes;
  o.overlap = overlap;
  return o;
}

TYPED_TEST(allreduce_strategy, hooks_sum_buckets_in_reverse_layer_order_and_update_applies_the_mean) {
  const std::size_t starts[] = {0, 100, 1100};
  const std::size_t n = 1200;
  for (const bool overlap : {true, false}) {
    TypeParam strategy(bucketed<TypeParam>(100 * sizeof(float), overlap));
    optim::example::descent sgd({.lr = 1.0f}, n);
    strategy.set_layer_starts(starts);
    std::vector<float> params(n, 0.0f), grads(n);
    strategy.template start<Sync>(params, sgd);
    const int p = strategy.world_size(), r = strategy.rank();
    EXPECT_EQ(std::vector<dist::Bucket>(strategy.buckets().begin(), strategy.buckets().end()),
              (std::vector<dist::Bucket>{{1100, 1200}, {100, 1100}, {0, 100}}));
    metrics::PhaseSeconds phases;
    for (int step = 0; step < 3; ++step) {
      strategy.backward_begins(grads);
      for (std::size_t l = 3; l-- > 0;) {
        // The layer writes its gradients, then reports them.
        for (std::size_t i = starts[l]; i < (l + 1 < 3 ? starts[l + 1] : n); ++i) grads[i] = integer_input(r, i);
        strategy.gradients_ready(starts[l]);
      }
      phases.backward = 1;  // the trainer's number: the strategy reports the hooks' time in comm, not here
      strategy.template update<Sync>(params, grads, sgd, phases);
      EXPECT_EQ(phases.backward, 1.0);
    }
    std::size_t wrong = 0;
    for (std::size_t i = 0; i < n; ++i) {
      float sum = 0;
      for (int q = 0; q < p; ++q) sum += integer_input(q, i);
      if (std::abs(params[i] - (-3.0f * sum / float(p))) > 1e-3f * std::max(1.0f, std::abs(sum))) ++wrong;
    }
    EXPECT_EQ(wrong, 0u) << "overlap " << overlap;
    EXPECT_GE(phases.comm_hidden, 0.0);
    EXPECT_GT(phases.comm, 0.0);
  }
}

TYPED_TEST(allreduce_strategy, zero_parameters_and_a_single_bucket_update_like_the_whole_buffer) {
  TypeParam empty_strategy(bucketed<TypeParam>(64, true));
  optim::example::descent none({}, 0);
  std::vector<float> nothing;
  empty_strategy.template start<Sync>(nothing, none);
  EXPECT_TRUE(empty_strategy.buckets().empty());
  metrics::PhaseSeconds phases;
  empty_strategy.backward_begins(nothing);
  empty_strategy.template update<Sync>(nothing, nothing, none, phases);

  TypeParam single(bucketed<TypeParam>(0, true));
  optim::example::descent sgd({.lr = 1.0f}, 3);
  const std::size_t starts[] = {0, 1, 2};
  single.set_layer_starts(starts);
  std::vector<float> params(3, 0.0f), grads = {1, 2, float(single.rank())};
  single.template start<Sync>(params, sgd);
  EXPECT_EQ(single.buckets().size(), 1u);
  single.backward_begins(grads);
  single.gradients_ready(2);  // the single bucket must wait for the first layer
  single.gradients_ready(1);
  single.gradients_ready(0);
  single.template update<Sync>(params, grads, sgd, phases);
  EXPECT_EQ(params, (std::vector<float>{-1, -2, -float(single.world_size() - 1) / 2}));
}

TYPED_TEST(allreduce_strategy, a_bucket_in_flight_while_backward_computes_counts_as_hidden_communication) {
  const std::size_t starts[] = {0, 100};
  const std::size_t n = 200;
  TypeParam strategy(bucketed<TypeParam>(100 * sizeof(float), true));
  optim::example::descent sgd({.lr = 1.0f}, n);
  strategy.set_layer_starts(starts);
  std::vector<float> params(n, 0.0f), grads(n, 1.0f);
  strategy.template start<Sync>(params, sgd);
  const int p = strategy.world_size(), r = strategy.rank();
  // Rank 0 starts backward 30 ms late, so no other rank's first bucket can complete before it, and each of
  // them has the bucket in flight during the 20 ms its "first layer" computes.
  if (r == 0) std::this_thread::sleep_for(std::chrono::milliseconds(30));
  metrics::PhaseSeconds phases;
  strategy.backward_begins(grads);
  strategy.gradients_ready(100);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  strategy.gradients_ready(0);
  strategy.template update<Sync>(params, grads, sgd, phases);
  EXPECT_EQ(params, std::vector<float>(n, -1.0f));
  EXPECT_GE(phases.comm_hidden, 0.0);
  if (p == 1) {
    EXPECT_EQ(phases.comm_hidden, 0.0) << "one rank has nothing to send";
  } else if (r != 0) {
    EXPECT_GT(phases.comm_hidden, 0.010) << "rank " << r;
  }
}

// The hierarchical transport under the strategy: buckets that overlap backward, the buffers' mean, and every rank
// ending with the same floats. Ranks pair up into emulated hosts of 2 where they can (np2: one host's window; np4:
// 2 hosts x 2 ranks, ctest dist.ring_allreduce_hierarchical_np4), else each is a host (a ring across hosts).
TEST(ring_allreduce_strategy, hierarchical_transport_overlaps_buckets_and_every_rank_holds_the_same_mean) {
  Mpi world;
  const int p = world.size(), r = world.rank();
  using Ring = dist::RingAllReduce<Mpi>;
  Ring::options o = bucketed<Ring>(100 * sizeof(float), true);
  o.transport = dist::RingTransport::hierarchical;
  o.host_ranks = p % 2 == 0 ? 2 : 1;
  Ring strategy(o, world);
  const std::size_t starts[] = {0, 100, 1100};
  const std::size_t n = 1200;
  optim::example::descent sgd({.lr = 1.0f}, n);
  strategy.set_layer_starts(starts);
  std::vector<float> params(n, 0.0f), grads(n);
  strategy.start<Sync>(params, sgd);
  metrics::PhaseSeconds phases;
  for (int step = 0; step < 2; ++step) {
    strategy.backward_begins(grads);
    for (std::size_t l = 3; l-- > 0;) {
      for (std::size_t i = starts[l]; i < (l + 1 < 3 ? starts[l + 1] : n); ++i)
        grads[i] = integer_input(r, i) + 0.1f * float(r + step);  // not integers: the sums round
      strategy.gradients_ready(starts[l]);
    }
    strategy.update<Sync>(params, grads, sgd, phases);
  }
  std::vector<float> buffers(333);
  for (std::size_t i = 0; i < buffers.size(); ++i) buffers[i] = integer_input(r, i);
  strategy.synchronize_buffers(buffers);
  std::vector<float> rank0 = params;
  world.broadcast(rank0, 0);
  std::size_t wrong = 0, wrong_buffers = 0;
  for (std::size_t i = 0; i < n; ++i) {
    double sum = 0;
    for (int step = 0; step < 2; ++step)
      for (int q = 0; q < p; ++q) sum += integer_input(q, i) + 0.1 * (q + step);
    if (std::abs(params[i] + sum / p) > 1e-3 * std::max(1.0, std::abs(sum))) ++wrong;
  }
  for (std::size_t i = 0; i < buffers.size(); ++i) {
    float sum = 0;
    for (int q = 0; q < p; ++q) sum += integer_input(q, i);
    if (p > 1 && buffers[i] != sum * (1.0f / float(p))) ++wrong_buffers;
  }
  EXPECT_EQ(wrong, 0u) << "rank " << r << ": parameters off the mean gradient's descent";
  EXPECT_EQ(wrong_buffers, 0u) << "rank " << r << ": buffers off their mean";
  EXPECT_EQ(params, rank0) << "rank " << r << " holds other parameters than rank 0";
}

TYPED_TEST(allreduce_strategy, start_names_a_rank_with_another_bucket_size) {
  const int r = boost::mpi::communicator().rank(), p = world_size();
  const std::string error = start_error(TypeParam(bucketed<TypeParam>(r == 0 ? 256 : 512, true)), 10);
  if (p > 1) {
    EXPECT_NE(error.find("rank 1 disagrees with rank 0 on the gradient bucket size in bytes (512 vs 256)"),
              std::string::npos)
        << error;
  } else {
    EXPECT_EQ(error, "no comm_error");
  }
}

}  // namespace
