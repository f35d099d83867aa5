// The all-reduce operations and strategies under mpiexec with 1, 2 or 3 ranks.
//
// Each rank's input is a deterministic function of (rank, index), so every rank computes the serial sum of
// all ranks' inputs itself. The inputs are integer-valued floats, whose sums are exact in any order, so the
// ring and MPI's all-reduce must equal the serial sum exactly; random floats are compared within a tolerance.
// Tests make every collective call before their first ASSERT, so a failing rank cannot leave the others waiting.
#include <gtest/gtest.h>

#include <boost/mpi/communicator.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <thread>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "sinew/comm/mpi.hpp"
#include "sinew/core/rng.hpp"
#include "sinew/dist/buckets.hpp"
#include "sinew/dist/mpi_allreduce.hpp"
#include "sinew/dist/ring_allreduce.hpp"

namespace {
using namespace sinew;
using comm::Mpi;

float integer_input(int rank, std::size_t i) {
  return float(int((i * 7919 + std::size_t(rank) * 104729) % 2001) - 1000);
}

enum class algorithm { ring, ring_chunk_64, ring_one_chunk_per_segment, ring_shared_memory, mpi, mpi_nonblocking };
enum class size_kind { empty, one, fewer_than_ranks, odd_1001, one_mib };

struct allreduce_case {
  algorithm how;
  size_kind size;
};

int world_size() { return boost::mpi::communicator().size(); }

std::size_t count_of(size_kind size) {
  switch (size) {
    case size_kind::empty: return 0;
    case size_kind::one: return 1;
    case size_kind::fewer_than_ranks: return std::size_t(world_size() - 1);
    case size_kind::odd_1001: return 1001;
    case size_kind::one_mib: return (1u << 20) / sizeof(float);
  }
  return 0;
}

void all_reduce(Mpi& world, algorithm how, std::span<float> data) {
  switch (how) {
    case algorithm::ring: dist::ring_allreduce_sum(world, data); break;
    case algorithm::ring_chunk_64: dist::ring_allreduce_sum(world, data, 64, dist::RingTransport::messages); break;
    case algorithm::ring_one_chunk_per_segment:
      dist::ring_allreduce_sum(world, data, 0, dist::RingTransport::messages);
      break;
    case algorithm::ring_shared_memory:
      dist::ring_allreduce_sum(world, data, dist::kRingChunkAuto, dist::RingTransport::shared_memory);
      break;
    case algorithm::mpi: world.allreduce_sum(data); break;
    case algorithm::mpi_nonblocking: world.iallreduce_sum(data).wait(); break;
  }
}

std::string name_of(const ::testing::TestParamInfo<allreduce_case>& info) {
  static const char* const how[] = {"ring",          "ring_chunk64", "ring_one_chunk_per_segment", "ring_shared_memory",
                                    "mpi",           "mpi_nonblocking"};
  static const char* const size[] = {"float_0", "float_1", "floats_fewer_than_ranks", "float_1001", "float_1MiB"};
  return std::string(how[int(info.param.how)]) + "_np" + std::to_string(world_size()) + "_" + size[int(info.param.size)];
}

class allreduce : public ::testing::TestWithParam<allreduce_case> {};

TEST_P(allreduce, integer_valued_floats_equal_the_serial_sum_exactly) {
  Mpi world;
  const std::size_t n = count_of(GetParam().size);
  std::vector<float> data(n), expected(n, 0.0f);
  for (std::size_t i = 0; i < n; ++i) {
    data[i] = integer_input(world.rank(), i);
    for (int r = 0; r < world.size(); ++r) expected[i] += integer_input(r, i);
  }
  all_reduce(world, GetParam().how, data);
  std::size_t wrong = 0, first_wrong = n;
  for (std::size_t i = 0; i < n; ++i)
    if (data[i] != expected[i]) first_wrong = std::min(first_wrong, i), ++wrong;
  EXPECT_EQ(wrong, 0u) << "rank " << world.rank() << ": first wrong element " << first_wrong << " of " << n << ": "
                       << (first_wrong < n ? data[first_wrong] : 0) << " instead of "
                       << (first_wrong < n ? expected[first_wrong] : 0);
}

std::vector<allreduce_case> every_case() {
  std::vector<allreduce_case> cases;
  for (algorithm how : {algorithm::ring, algorithm::ring_chunk_64, algorithm::ring_one_chunk_per_segment,
                        algorithm::ring_shared_memory, algorithm::mpi, algorithm::mpi_nonblocking})
    for (size_kind size :
         {size_kind::empty, size_kind::one, size_kind::fewer_than_ranks, size_kind::odd_1001, size_kind::one_mib})
      cases.push_back({how, size});
  return cases;
}
INSTANTIATE_TEST_SUITE_P(sum, allreduce, ::testing::ValuesIn(every_case()), name_of);

std::vector<float> random_input(int rank, std::size_t n) {
  Rng rng(1000 + std::uint64_t(rank));
  std::vector<float> x(n);
  for (float& v : x) v = rng.uniform(-1.0f, 1.0f);
  return x;
}

class ring_transport : public ::testing::TestWithParam<dist::RingTransport> {};

std::string transport_name(const ::testing::TestParamInfo<dist::RingTransport>& info) {
  return info.param == dist::RingTransport::messages ? "messages" : "shared_memory";
}

TEST_P(ring_transport, random_floats_1001_are_within_1e_6_of_the_double_sum_and_bitwise_equal_on_every_rank) {
  Mpi world;
  const std::size_t n = 1001;
  std::vector<float> data = random_input(world.rank(), n);
  dist::ring_allreduce_sum(world, data, 100, GetParam());
  std::vector<float> rank0 = data;
  world.broadcast(rank0, 0);
  std::vector<double> exact(n, 0.0);
  for (int r = 0; r < world.size(); ++r) {
    const std::vector<float> x = random_input(r, n);
    for (std::size_t i = 0; i < n; ++i) exact[i] += x[i];
  }
  for (std::size_t i = 0; i < n; ++i) ASSERT_NEAR(data[i], exact[i], 1e-6) << "element " << i;
  EXPECT_EQ(std::memcmp(data.data(), rank0.data(), n * sizeof(float)), 0)
      << "rank " << world.rank() << " holds a different sum than rank 0";
}

// With the shared window capped at 700 floats: 1001 and 5000 floats take rounds, 10 fits, the window grows once.
TEST_P(ring_transport, workspace_is_reused_across_sizes) {
  Mpi world;
  dist::RingWorkspace<Mpi> work;
  work.window_floats_max = 700;
  bool all_right = true;
  for (std::size_t n : {std::size_t(10), std::size_t(1001), std::size_t(10), std::size_t(5000)}) {
    std::vector<float> data(n);
    for (std::size_t i = 0; i < n; ++i) data[i] = integer_input(world.rank(), i);
    dist::ring_allreduce_sum(world, data, work, 128, GetParam());
    for (std::size_t i = 0; i < n; ++i) {
      float expected = 0;
      for (int r = 0; r < world.size(); ++r) expected += integer_input(r, i);
      all_right = all_right && data[i] == expected;
    }
  }
  EXPECT_TRUE(all_right);
}
// A ring driven by advance() alone (as the hooks drive it), two in a row on one tag (or window).
TEST_P(ring_transport, two_rings_in_a_row_driven_without_blocking_equal_the_serial_sums) {
  Mpi world;
  std::vector<float> a(1001), b(77);
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = integer_input(world.rank(), i);
  for (std::size_t i = 0; i < b.size(); ++i) b[i] = integer_input(world.rank(), i + 5);
  dist::RingWorkspace<Mpi> work;
  dist::RingOperation<Mpi> ring;
  ring.start(world, a, work, 64, dist::detail::kRingTag, GetParam());
  std::size_t polls = 0;
  while (!ring.advance()) ++polls;
  ring.start(world, b, work, 16, dist::detail::kRingTag, GetParam());
  while (!ring.advance()) ++polls;
  bool all_right = true;
  for (std::size_t i = 0; i < a.size(); ++i) {
    float expected = 0;
    for (int r = 0; r < world.size(); ++r) expected += integer_input(r, i);
    all_right = all_right && a[i] == expected;
  }
  for (std::size_t i = 0; i < b.size(); ++i) {
    float expected = 0;
    for (int r = 0; r < world.size(); ++r) expected += integer_input(r, i + 5);
    all_right = all_right && b[i] == expected;
  }
  EXPECT_TRUE(all_right);
  EXPECT_TRUE(ring.done());
}

INSTANTIATE_TEST_SUITE_P(ring, ring_transport,
                         ::testing::Values(dist::RingTransport::messages, dist::RingTransport::shared_memory),
                         transport_name);

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

// scripts/cluster's run sets SINEW_CLUSTER_HOSTS (tests/cluster runs this test across 3 hosts); elsewhere
// every rank of this test runs on this machine.
TEST(ring_allreduce, hosts_are_counted_and_pick_the_chunk_size) {
  Mpi world;
  const char* cluster = std::getenv("SINEW_CLUSTER_HOSTS");
  const int expected = cluster ? std::min(std::atoi(cluster), world.size()) : 1;
  EXPECT_EQ(world.hosts(), expected);
  EXPECT_EQ(dist::ring_chunk_floats(world, dist::kRingChunkAuto),
            expected > 1 ? dist::kRingChunkNetworkFloats : dist::kRingChunkFloats);
  EXPECT_EQ(dist::ring_chunk_floats(world, 64), 64u) << "an explicit chunk size is kept";
  struct two_hosts : comm::example::single_process {
    int hosts() const { return 2; }
  };
  EXPECT_EQ(dist::ring_chunk_floats(two_hosts{}, dist::kRingChunkAuto), dist::kRingChunkNetworkFloats);
  EXPECT_EQ(dist::ring_chunk_floats(comm::example::single_process{}, dist::kRingChunkAuto), dist::kRingChunkFloats)
      << "a communicator that does not say where it runs counts as one host";
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


// Bucket layout: reverse layer order, cut on layer starts only.
TEST(bucket_layout, buckets_run_from_the_last_layers_to_the_first_and_cut_only_on_layer_starts) {
  const std::size_t starts[] = {0, 48, 1664, 1712};  // four layers; total 1728 floats
  const auto buckets = dist::plan_buckets(starts, 1728, 64);
  // From the end: [1712, 1728) has 16 < 64 floats, so it takes the layer before too: [1664, 1728); then the
  // 1616-float layer alone; then the first two layers, the remainder, smaller than 64 floats.
  const std::vector<dist::Bucket> expected = {{1664, 1728}, {48, 1664}, {0, 48}};
  EXPECT_EQ(buckets, expected);
}

TEST(bucket_layout, a_zero_bucket_size_or_a_large_one_gives_a_single_bucket) {
  const std::size_t starts[] = {0, 48, 1664};
  EXPECT_EQ(dist::plan_buckets(starts, 1700, 0), (std::vector<dist::Bucket>{{0, 1700}}));
  EXPECT_EQ(dist::plan_buckets(starts, 1700, 1u << 20), (std::vector<dist::Bucket>{{0, 1700}}));
  EXPECT_EQ(dist::plan_buckets({}, 1700, 64), (std::vector<dist::Bucket>{{0, 1700}})) << "no layers: one layer";
}

TEST(bucket_layout, zero_gradients_give_no_bucket_and_every_layer_can_be_its_own) {
  EXPECT_TRUE(dist::plan_buckets({}, 0, 64).empty());
  const std::size_t starts[] = {0, 16, 32};
  EXPECT_EQ(dist::plan_buckets(starts, 48, 1), (std::vector<dist::Bucket>{{32, 48}, {16, 32}, {0, 16}}));
}

TEST(bucket_layout, layer_starts_out_of_order_are_an_error_naming_the_fix) {
  const std::size_t starts[] = {0, 64, 32};
  try {
    dist::plan_buckets(starts, 100, 16);
    FAIL() << "no error";
  } catch (const error& e) {
    EXPECT_NE(std::string(e.what()).find("layer start 2 (32) is not ascending"), std::string::npos) << e.what();
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
