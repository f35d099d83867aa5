// The all-reduce operations and strategies under mpiexec with 1, 2 or 3 ranks.
//
// Each rank's input is a deterministic function of (rank, index), so every rank computes the serial sum of
// all ranks' inputs itself. The inputs are integer-valued floats, whose sums are exact in any order, so the
// ring and MPI's all-reduce must equal the serial sum exactly; random floats are compared within a tolerance.
// Tests make every collective call before their first ASSERT, so a failing rank cannot leave the others waiting.
#include <gtest/gtest.h>

#include <boost/mpi/communicator.hpp>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "sinew/comm/mpi.hpp"
#include "sinew/core/rng.hpp"
#include "sinew/dist/mpi_allreduce.hpp"
#include "sinew/dist/ring_allreduce.hpp"

namespace {
using namespace sinew;
using comm::Mpi;

float integer_input(int rank, std::size_t i) {
  return float(int((i * 7919 + std::size_t(rank) * 104729) % 2001) - 1000);
}

enum class algorithm { ring, ring_chunk_64, ring_one_chunk_per_segment, mpi, mpi_nonblocking };
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
    case algorithm::ring_chunk_64: dist::ring_allreduce_sum(world, data, 64); break;
    case algorithm::ring_one_chunk_per_segment: dist::ring_allreduce_sum(world, data, 0); break;
    case algorithm::mpi: world.allreduce_sum(data); break;
    case algorithm::mpi_nonblocking: world.iallreduce_sum(data).wait(); break;
  }
}

std::string name_of(const ::testing::TestParamInfo<allreduce_case>& info) {
  static const char* const how[] = {"ring", "ring_chunk64", "ring_one_chunk_per_segment", "mpi", "mpi_nonblocking"};
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
                        algorithm::mpi, algorithm::mpi_nonblocking})
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

TEST(ring_allreduce, random_floats_1001_are_within_1e_6_of_the_double_sum_and_bitwise_equal_on_every_rank) {
  Mpi world;
  const std::size_t n = 1001;
  std::vector<float> data = random_input(world.rank(), n);
  dist::ring_allreduce_sum(world, data, 100);
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

TEST(ring_allreduce, workspace_is_reused_across_sizes) {
  Mpi world;
  dist::RingWorkspace<Mpi> work;
  bool all_right = true;
  for (std::size_t n : {std::size_t(1001), std::size_t(10), std::size_t(5000)}) {
    std::vector<float> data(n);
    for (std::size_t i = 0; i < n; ++i) data[i] = integer_input(world.rank(), i);
    dist::ring_allreduce_sum(world, data, work, 128);
    for (std::size_t i = 0; i < n; ++i) {
      float expected = 0;
      for (int r = 0; r < world.size(); ++r) expected += integer_input(r, i);
      all_right = all_right && data[i] == expected;
    }
  }
  EXPECT_TRUE(all_right);
}

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

}  // namespace
