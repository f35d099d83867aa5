// The ring collective (dist/ring_allreduce.hpp's ring_allreduce_sum, RingWorkspace, RingOperation and the chunk
// size it picks) against the serial sum and against MPI's own all-reduce, under mpiexec with 1, 2 or 3 ranks.
// The strategies built on it are tested in tests/dist/test_ring_allreduce.cpp.
//
// Each rank's input is a deterministic function of (rank, index) (tests/support/rank_inputs.hpp), so every rank
// computes the serial sum of all ranks' inputs itself. The inputs are integer-valued floats, whose sums are exact
// in any order, so the ring and MPI's all-reduce must equal the serial sum exactly; random floats are compared
// within a tolerance.
// Tests make every collective call before their first ASSERT, so a failing rank cannot leave the others waiting.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "../support/rank_inputs.hpp"
#include "sinew/comm/mpi.hpp"
#include "sinew/core/rng.hpp"
#include "sinew/dist/ring_allreduce.hpp"

namespace {
using namespace sinew;
using comm::Mpi;
using test::integer_input;
using test::world_size;

enum class algorithm { ring, ring_chunk_64, ring_one_chunk_per_segment, ring_shared_memory, mpi, mpi_nonblocking };
enum class size_kind { empty, one, fewer_than_ranks, odd_1001, one_mib };

struct allreduce_case {
  algorithm how;
  size_kind size;
};

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

// The sum of every rank's random_input, in double.
std::vector<double> random_sum(int ranks, std::size_t n) {
  std::vector<double> exact(n, 0.0);
  for (int r = 0; r < ranks; ++r) {
    const std::vector<float> x = random_input(r, n);
    for (std::size_t i = 0; i < n; ++i) exact[i] += x[i];
  }
  return exact;
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
  const std::vector<double> exact = random_sum(world.size(), n);
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

// The hierarchical transport (window within each host, ring across hosts) on every grouping of the ranks into
// hosts that divides them: 0 is the launcher's own (one host here; 2 hosts x 2 ranks under tests/cluster), k
// takes every k consecutive ranks as a host. With 4 ranks and k = 2 (ctest comm.mpi_hierarchical_np4) and across
// the cluster's hosts, a rank that skipped the step across hosts would end with its host's sum, not the serial
// sum, so the exact comparison fails.
// (An emulated host must lie within a real one, whose shared window it uses.)
std::vector<int> host_groupings(const Mpi& world) {
  std::vector<int> ks = {0};
  const int per_host = world.size() / world.hosts();
  for (int k = 1; k <= per_host; ++k)
    if (per_host % k == 0) ks.push_back(k);
  return ks;
}

TEST(hierarchical, integer_valued_floats_equal_the_serial_sum_exactly_on_every_grouping_into_hosts) {
  Mpi world;
  const std::size_t sizes[] = {0, 1, std::size_t(world.size() - 1), 1001, (1u << 20) / sizeof(float)};
  for (const int k : host_groupings(world)) {
    dist::RingWorkspace<Mpi> work;
    work.host_ranks = k;
    work.window_floats_max = 700;  // 1001 floats take 2 rounds through the window
    for (const std::size_t n : sizes) {
      if (n > 1001) work.window_floats_max = std::size_t(1) << 16;  // the window grows; 1 MiB takes 4 rounds
      std::vector<float> data(n);
      for (std::size_t i = 0; i < n; ++i) data[i] = integer_input(world.rank(), i);
      if (n == 1001) {  // driven by advance() alone, as the overlap hooks drive it
        dist::RingOperation<Mpi> ring;
        ring.start(world, data, work, 64, dist::detail::kRingTag, dist::RingTransport::hierarchical);
        while (!ring.advance()) {
        }
      } else {
        dist::ring_allreduce_sum(world, data, work, dist::kRingChunkAuto, dist::RingTransport::hierarchical);
      }
      std::size_t wrong = 0, first_wrong = n;
      for (std::size_t i = 0; i < n; ++i) {
        float expected = 0;
        for (int r = 0; r < world.size(); ++r) expected += integer_input(r, i);
        if (data[i] != expected) first_wrong = std::min(first_wrong, i), ++wrong;
      }
      EXPECT_EQ(wrong, 0u) << "rank " << world.rank() << ", " << k << " ranks a host (0: the launcher's), " << n
                           << " floats: first wrong element " << first_wrong;
    }
  }
}

TEST(hierarchical, random_floats_are_bitwise_equal_on_every_rank_and_within_rounding_of_the_flat_ring) {
  Mpi world;
  const std::size_t n = 100003;
  for (const int k : host_groupings(world)) {
    std::vector<float> data = random_input(world.rank(), n), flat = data;
    dist::RingWorkspace<Mpi> work;
    work.host_ranks = k;
    dist::ring_allreduce_sum(world, data, work, dist::kRingChunkAuto, dist::RingTransport::hierarchical);
    dist::ring_allreduce_sum(world, flat, dist::kRingChunkAuto, dist::RingTransport::messages);
    std::vector<float> rank0 = data;
    world.broadcast(rank0, 0);
    const std::vector<double> exact = random_sum(world.size(), n);
    std::size_t far = 0;
    for (std::size_t i = 0; i < n; ++i)
      if (std::abs(data[i] - exact[i]) > 1e-6 || std::abs(data[i] - flat[i]) > 1e-6) ++far;
    EXPECT_EQ(far, 0u) << k << " ranks a host: elements off the double sum or the flat ring by more than 1e-6";
    EXPECT_EQ(std::memcmp(data.data(), rank0.data(), n * sizeof(float)), 0)
        << "rank " << world.rank() << " holds a different sum than rank 0 (" << k << " ranks a host)";
  }
}

// Floats kept in share()'s memory are summed where they lie (in_place()), to the very floats the copying path
// gives (both add the same floats in rank order), bucket after bucket and step after step. The peers read a
// rank's floats until their gather, so a sum in place must end only once every peer on the host holds it: a rank
// that went on sooner could overwrite floats a peer still reads. Ranks other than 0 pause between polls, so that
// rank 0 would finish long before them without that wait; each rank then reads its peers' parts, which must
// already hold the sum. One rank (or one rank a host) has no peer to share with: share() gives nothing.
TEST(ring_in_place, sums_equal_the_copying_path_and_end_once_every_peer_on_the_host_holds_them) {
  Mpi world;
  const std::size_t n = 3001, cut = 1100;  // two buckets, the later floats first (as backward fills them)
  struct transport_case {
    dist::RingTransport transport;
    int k;  // hierarchical: ranks a host (host_groupings)
  };
  std::vector<transport_case> cases;
  if (world.hosts() == 1) cases.push_back({dist::RingTransport::shared_memory, 0});
  for (const int k : host_groupings(world)) cases.push_back({dist::RingTransport::hierarchical, k});
  for (const auto& [transport, k] : cases) {
    const int host = transport == dist::RingTransport::hierarchical && k > 0 ? k : world.size() / world.hosts();
    dist::RingWorkspace<Mpi> work, copying;
    work.host_ranks = copying.host_ranks = k;
    const std::span<float> mine = dist::RingOperation<Mpi>::share(world, work, n, transport);
    EXPECT_EQ(mine.empty(), host == 1) << k << " ranks a host";
    if (mine.empty()) continue;  // alike on every rank: k and the hosts are the same everywhere
    std::size_t in_place = 0, peers_behind = 0, differ = 0;
    for (std::uint64_t step = 0; step < 3; ++step) {
      Rng rng(77 + 10 * step + std::uint64_t(world.rank()));
      std::vector<float> values(n);
      for (float& v : values) v = rng.uniform(-1.0f, 1.0f);
      std::vector<float> expected = values;
      // Collective: once it ends here, every rank has finished checking the last step, so this one may write.
      dist::ring_allreduce_sum(world, expected, copying, dist::kRingChunkAuto, transport);
      std::copy(values.begin(), values.end(), mine.begin());
      for (const auto& [first, last] : {std::pair{cut, n}, std::pair{std::size_t(0), cut}}) {
        dist::RingOperation<Mpi> ring;
        ring.start(world, mine.subspan(first, last - first), work, dist::kRingChunkAuto, dist::detail::kRingTag,
                   transport);
        in_place += ring.in_place();
        while (!ring.advance())
          if (world.rank() != 0) std::this_thread::sleep_for(std::chrono::milliseconds(2));
        for (int q = 0; q < host; ++q) {
          const float* peer = reinterpret_cast<const float*>(work.shared_data.base(q));
          peers_behind += std::memcmp(peer + first, expected.data() + first, (last - first) * sizeof(float)) != 0;
        }
      }
      differ += std::memcmp(mine.data(), expected.data(), n * sizeof(float)) != 0;
    }
    EXPECT_EQ(in_place, 6u) << k << " ranks a host: sums of floats in share()'s memory that did not read them in place";
    EXPECT_EQ(peers_behind, 0u) << "rank " << world.rank() << ", " << k
                                << " ranks a host: a sum in place ended before every peer held it";
    EXPECT_EQ(differ, 0u) << "rank " << world.rank() << ", " << k
                          << " ranks a host: steps whose sums in place differ from the copying path's";
  }
}

// Under tests/cluster (SINEW_CLUSTER_HOSTS set) the launcher's hosts split the ranks evenly.
TEST(hierarchical, host_split_gives_the_hosts_ranks_and_one_peer_on_every_host) {
  Mpi world;
  comm::HostSplit<Mpi> split = world.host_split();
  comm::HostSplit<Mpi> pairs = world.host_split(world.size() % 2 == 0 ? 2 : 1);
  EXPECT_EQ(split.local.size() * split.across.size(), world.size());
  EXPECT_EQ(split.across.size(), world.hosts());
  EXPECT_EQ(split.local.hosts(), 1);
  EXPECT_EQ(pairs.local.size(), world.size() % 2 == 0 ? 2 : 1);
  EXPECT_EQ(pairs.local.rank(), world.rank() % pairs.local.size());
  EXPECT_EQ(pairs.across.rank(), world.rank() / pairs.local.size());
  if (world.hosts() > 1) {  // one "host" of every rank spans real hosts, which share no window: refused alike
    std::string error = "no comm_error";
    try {
      world.host_split(world.size());
    } catch (const comm_error& e) {
      error = e.what();
    }
    EXPECT_NE(error.find("groups ranks of " + std::to_string(world.hosts()) + " hosts as one, which share no memory"),
              std::string::npos)
        << error;
  }
  if (world.size() == 3) {  // hosts of 2 and 1 ranks: every rank refuses alike, naming the counts and the fix
    std::string error = "no comm_error";
    try {
      world.host_split(2);
    } catch (const comm_error& e) {
      error = e.what();
    }
    EXPECT_NE(error.find("as many ranks on every host, but the hosts hold 1 to 2 (place them evenly"),
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

}  // namespace
