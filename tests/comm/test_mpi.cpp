// comm::Mpi under mpiexec with 1, 2 or 3 ranks: every operation of the Communicator contract, the shared
// environment, and failures that become comm_errors naming the operation and the peer.
// Tests make every collective call before their first ASSERT, so a failing rank cannot leave the others waiting.
#include <gtest/gtest.h>

#include <boost/mpi/communicator.hpp>
#include <boost/mpi/environment.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "sinew/comm/agreement.hpp"
#include "sinew/comm/failure.hpp"
#include "sinew/comm/mpi.hpp"

namespace {
using sinew::comm::Mpi;
using sinew::comm::MpiSharedWindow;

std::string error_of(auto&& f) {
  try {
    f();
  } catch (const sinew::comm_error& e) {
    return e.what();
  }
  return "no comm_error";
}

TEST(mpi, rank_and_size_match_mpi_comm_world) {
  Mpi world;
  boost::mpi::communicator boost_world;
  EXPECT_EQ(world.size(), boost_world.size());
  EXPECT_EQ(world.rank(), boost_world.rank());
  EXPECT_NE(world.native(), MPI_COMM_WORLD) << "Mpi must work on a duplicate";
}

// The MPI tests run with --bind-to none (SINEW_MPIEXEC_FLAGS): every rank has the same CPU set, so they all
// share it, in rank order.
TEST(mpi, host_share_counts_every_rank_with_the_same_cpu_set_in_rank_order) {
  Mpi world;
  const sinew::HostShare share = world.host_share();
  EXPECT_EQ(share.count, world.size());
  EXPECT_EQ(share.index, world.rank());
  EXPECT_EQ(world.hosts(), 1);
}

TEST(mpi, objects_share_one_environment_of_at_least_funneled) {
  Mpi a, b;
  EXPECT_TRUE(boost::mpi::environment::initialized());
  EXPECT_EQ(&sinew::comm::mpi_environment(), &sinew::comm::mpi_environment());
  int provided = MPI_THREAD_SINGLE;
  MPI_Query_thread(&provided);
  EXPECT_GE(provided, MPI_THREAD_FUNNELED);
  EXPECT_EQ(a.size(), b.size());
  // Each object is its own duplicate: a message on one cannot be received on the other.
  int compare = MPI_IDENT;
  MPI_Comm_compare(a.native(), b.native(), &compare);
  EXPECT_EQ(compare, MPI_CONGRUENT);
}

TEST(mpi, blocking_send_recv_pass_a_token_around_the_ring) {
  Mpi world;
  const int p = world.size(), r = world.rank();
  if (p == 1) GTEST_SKIP() << "needs two ranks";
  std::vector<float> token(5, 0.0f);
  if (r == 0) {
    std::iota(token.begin(), token.end(), 1.0f);
    world.send(token, 1, 3);
    world.recv(token, p - 1, 3);
  } else {
    world.recv(token, r - 1, 3);
    for (float& t : token) t += float(r);
    world.send(token, (r + 1) % p, 3);
  }
  if (r == 0) {
    const float added = float(p * (p - 1) / 2);
    for (int i = 0; i < 5; ++i) EXPECT_EQ(token[std::size_t(i)], float(i + 1) + added);
  }
}

TEST(mpi, isend_irecv_exchange_with_both_neighbours) {
  Mpi world;
  const int p = world.size(), r = world.rank();
  if (p == 1) GTEST_SKIP() << "needs two ranks";
  const int right = (r + 1) % p, left = (r + p - 1) % p;
  std::vector<float> to_right(1000, float(r)), to_left(1000, float(-r)), from_left(1000), from_right(1000);
  // Tags tell the two directions apart when left == right (2 ranks).
  auto a = world.irecv(from_left, left, 1);
  auto b = world.irecv(from_right, right, 2);
  auto c = world.isend(to_right, right, 1);
  auto d = world.isend(to_left, left, 2);
  while (!a.test()) {
  }
  b.wait(), c.wait(), d.wait();
  EXPECT_TRUE(b.test()) << "a completed request stays complete";
  EXPECT_EQ(from_left.front(), float(left));
  EXPECT_EQ(from_left.back(), float(left));
  EXPECT_EQ(from_right.back(), float(-right));
}

TEST(mpi, probe_any_names_each_sender_whose_message_is_then_received) {
  Mpi world;
  const int p = world.size(), r = world.rank();
  if (p == 1) GTEST_SKIP() << "needs two ranks";
  std::vector<int> senders;
  if (r != 0) {
    world.send(std::vector<float>(2, float(r)), 0, 11);
  } else {
    for (int k = 1; k < p; ++k) {
      const int sender = world.probe_any(11);
      std::vector<float> message(2);
      world.recv(message, sender, 11);
      EXPECT_EQ(message[0], float(sender)) << "probe_any named rank " << sender << " for another rank's message";
      senders.push_back(sender);
    }
    std::sort(senders.begin(), senders.end());
    std::vector<int> everyone(std::size_t(p - 1));
    std::iota(everyone.begin(), everyone.end(), 1);
    EXPECT_EQ(senders, everyone);
  }
}

TEST(mpi, iprobe_any_answers_minus_one_until_a_message_has_come) {
  Mpi world;
  const int p = world.size(), r = world.rank();
  EXPECT_EQ(world.iprobe_any(12), -1) << "nothing was sent with tag 12 yet";
  if (p == 1) return;
  world.barrier();
  if (r == p - 1) world.send(std::vector<float>(1, 5.0f), 0, 12);
  if (r == 0) {
    int sender = -1;
    while (sender < 0) sender = world.iprobe_any(12);
    EXPECT_EQ(sender, p - 1);
    std::vector<float> message(1);
    world.recv(message, sender, 12);
    EXPECT_EQ(message[0], 5.0f);
  }
  world.barrier();
}

TEST(mpi, require_agreement_skips_the_facts_of_ranks_that_do_not_count) {
  Mpi world;
  const int p = world.size(), r = world.rank();
  if (p == 1) GTEST_SKIP() << "needs two ranks";
  // The last rank holds another value: ignored when it does not count, named when it does.
  const sinew::comm::Fact facts[] = {{"batch size", r == p - 1 ? 99u : 7u}};
  EXPECT_NO_THROW(sinew::comm::require_agreement(world, std::span<const sinew::comm::Fact>(facts), "test", r != p - 1));
  std::string error = "no comm_error";
  try {
    sinew::comm::require_agreement(world, std::span<const sinew::comm::Fact>(facts), "test");
  } catch (const sinew::comm_error& e) {
    error = e.what();
  }
  EXPECT_EQ(error, "test: rank " + std::to_string(p - 1) + " disagrees with rank 0 on the batch size (99 vs 7); " +
                       "every rank must run the same network, optimizer and options");
}

// comm/failure.hpp: an exception that takes a guard down notes that this rank leaves; one caught inside the
// guard's scope does not. The test clears the note: otherwise the exit hook would abort this run.
TEST(mpi, a_guard_destroyed_by_an_exception_notes_that_the_rank_leaves) {
  Mpi world;
  try {
    sinew::comm::unwinding_guard guard(world.rank());
    try {
      throw std::runtime_error("caught inside");
    } catch (const std::runtime_error&) {
    }
    EXPECT_EQ(sinew::comm::leaving().rank, -1);
    throw std::runtime_error("leaves the guard's scope");
  } catch (const std::runtime_error&) {
  }
  EXPECT_EQ(sinew::comm::leaving().rank, world.rank());
  sinew::comm::clear_leaving();
  EXPECT_EQ(sinew::comm::leaving().rank, -1);
}

TEST(mpi, allreduce_sum_and_iallreduce_sum_add_every_rank) {
  Mpi world;
  const int p = world.size(), r = world.rank();
  std::vector<float> blocking = {float(r), 1.0f, float(r * r)}, nonblocking = blocking;
  world.allreduce_sum(blocking);
  auto request = world.iallreduce_sum(nonblocking);
  request.wait();
  std::vector<float> empty;
  world.allreduce_sum(empty);
  world.iallreduce_sum(empty).wait();
  const float ranks = float(p * (p - 1) / 2), squares = float((p - 1) * p * (2 * p - 1) / 6);
  EXPECT_EQ(blocking, (std::vector<float>{ranks, float(p), squares}));
  EXPECT_EQ(nonblocking, blocking);
}

TEST(mpi, broadcast_from_the_last_rank_and_barrier) {
  Mpi world;
  const int p = world.size(), r = world.rank();
  std::vector<float> data(3, float(r));
  world.broadcast(data, p - 1);
  world.barrier();
  EXPECT_EQ(data, std::vector<float>(3, float(p - 1)));
}

// Every rank writes into its own part of a shared window and reads every other rank's, no message between.
TEST(mpi, shared_window_parts_are_zeroed_aligned_and_each_rank_reads_every_other_ranks_writes) {
  Mpi world;
  constexpr std::size_t kFloats = 1000;
  MpiSharedWindow window = world.shared_window(kFloats * sizeof(float));
  bool zeroed = true, aligned = true;
  for (int r = 0; r < world.size(); ++r) {
    const std::byte* base = window.base(r);
    aligned = aligned && base != nullptr && reinterpret_cast<std::uintptr_t>(base) % 64 == 0;
    if (r == world.rank())
      for (std::size_t i = 0; i < kFloats * sizeof(float); ++i) zeroed = zeroed && base[i] == std::byte{0};
  }
  float* mine = reinterpret_cast<float*>(window.base(world.rank()));
  for (std::size_t i = 0; i < kFloats; ++i) mine[i] = float(world.rank() * 10000 + int(i));
  world.barrier();  // every rank's stores are done (and seen: MPI_Barrier orders memory on one host)
  std::size_t wrong = 0;
  for (int r = 0; r < world.size(); ++r) {
    const float* theirs = reinterpret_cast<const float*>(window.base(r));
    for (std::size_t i = 0; i < kFloats; ++i) wrong += theirs[i] != float(r * 10000 + int(i));
  }
  world.barrier();  // nobody frees (collectively) while another still reads
  EXPECT_TRUE(zeroed) << "rank " << world.rank();
  EXPECT_TRUE(aligned) << "rank " << world.rank();
  EXPECT_EQ(wrong, 0u) << "rank " << world.rank();
  EXPECT_EQ(window.base(world.size()), nullptr) << "no part past the last rank";
}

TEST(mpi, send_to_a_rank_out_of_range_is_a_comm_error_naming_operation_and_peer) {
  Mpi world;
  const int p = world.size(), r = world.rank();
  std::vector<float> data(4);
  const std::string sent = error_of([&] { world.send(data, p, 9); });
  const std::string received = error_of([&] { world.irecv(data, p + 1, 9).wait(); });
  EXPECT_NE(sent.find("comm::Mpi: rank " + std::to_string(r) + ": send to rank " + std::to_string(p) +
                      " (tag 9) of 4 floats failed: MPI_ERR_RANK"),
            std::string::npos)
      << sent;
  EXPECT_NE(received.find("irecv from rank " + std::to_string(p + 1) + " (tag 9) of 4 floats failed"),
            std::string::npos)
      << received;
}

TEST(mpi, receiving_into_a_span_of_another_size_is_a_comm_error) {
  Mpi world;
  const int p = world.size(), r = world.rank();
  if (p == 1) GTEST_SKIP() << "needs two ranks";
  std::vector<float> four(4, 1.0f), two(2), eight(8);
  std::string too_long = "rank 1 only", too_short = "rank 1 only";
  if (r == 0) {
    world.send(four, 1, 5);
    world.send(four, 1, 6);
  } else if (r == 1) {
    too_long = error_of([&] { world.recv(two, 0, 5); });
    too_short = error_of([&] { world.recv(eight, 0, 6); });
  }
  world.barrier();
  if (r == 1) {
    EXPECT_NE(too_long.find("recv from rank 0 (tag 5) of 2 floats failed: MPI_ERR_TRUNCATE"), std::string::npos)
        << too_long;
    EXPECT_NE(too_short.find("irecv from rank 0 (tag 6) of 8 floats received only 4 floats"), std::string::npos)
        << too_short;
  }
}

}  // namespace
