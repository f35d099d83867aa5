// Core utilities: the seeded RNG, aligned buffers, the JSON writer.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <set>
#include <thread>
#include <vector>

#include "sinew/core.hpp"
#include "sinew/core/affinity.hpp"
#include "sinew/core/parallel.hpp"
#include "sinew/core/streaming_store.hpp"
#include "sinew/tensor.hpp"

namespace {
using namespace sinew;

TEST(rng, same_seed_same_stream_and_uniform_in_range) {
  Rng a(42), b(42), c(43);
  bool differs = false;
  for (int i = 0; i < 1000; ++i) {
    const float u = a.uniform(-2, 3);
    EXPECT_EQ(u, b.uniform(-2, 3));
    differs |= u != c.uniform(-2, 3);
    EXPECT_GE(u, -2.0f);
    EXPECT_LT(u, 3.0f);
  }
  EXPECT_TRUE(differs);
}

TEST(rng, below_covers_every_value_without_leaving_the_range) {
  Rng r(1);
  std::set<std::uint64_t> seen;
  for (int i = 0; i < 2000; ++i) {
    const auto v = r.below(7);
    ASSERT_LT(v, 7u);
    seen.insert(v);
  }
  EXPECT_EQ(seen.size(), 7u);
}

TEST(rng, normal_has_unit_variance) {
  Rng r(5);
  double s = 0, s2 = 0;
  const int n = 200000;
  for (int i = 0; i < n; ++i) {
    const double v = r.normal();
    s += v, s2 += v * v;
  }
  EXPECT_NEAR(s / n, 0.0, 0.01);
  EXPECT_NEAR(s2 / n, 1.0, 0.02);
}

// n / threads rounded down, then up to the alignment, once lost the last elements (5 over 2 threads: [0, 2),
// [2, 4), and element 4 never ran; OneDnn's small-image convolution left its fifth channel unset).
TEST(parallel_ranges, covers_every_element_once_when_threads_do_not_divide_n) {
  for (const std::size_t n : {std::size_t(5), std::size_t(7), std::size_t(33), std::size_t(65537)}) {
    std::vector<int> hits(n, 0);
    sinew::parallel_ranges(
        n, [&](std::size_t b, std::size_t e) { for (std::size_t i = b; i < e; ++i) ++hits[i]; }, n > 100 ? 16 : 1, 1);
    EXPECT_EQ(std::count(hits.begin(), hits.end(), 1), std::ptrdiff_t(n)) << n << " elements";
  }
}

TEST(aligned_buffer, is_64_byte_aligned_and_zeroed) {
  for (std::size_t n : {1u, 15u, 16u, 1000u}) {
    AlignedBuffer<float> b(n);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(b.data()) % 64, 0u);
    for (float v : b) EXPECT_EQ(v, 0.0f);
  }
  EXPECT_EQ(align_floats(1), 16u);
  EXPECT_EQ(align_floats(16), 16u);
  EXPECT_EQ(align_floats(17), 32u);
}

// Splitting a host's cores between the ranks that share them (core/affinity.hpp).
// Every float lands whatever the destination's alignment (the head up to its 16-byte boundary is written
// plainly) and the tail's length, and nothing past n is touched.
TEST(stream_copy, copies_every_float_from_any_alignment_and_length) {
  std::vector<float> src(200);
  for (std::size_t i = 0; i < src.size(); ++i) src[i] = float(i) + 0.5f;
  for (std::size_t offset = 0; offset < 4; ++offset)
    for (const std::size_t n : {0, 1, 3, 4, 5, 17, 64, 131}) {
      AlignedBuffer<float> dst(offset + n + 8);
      std::fill_n(dst.data(), dst.size(), -1.0f);
      simd::stream_copy(dst.data() + offset, src.data() + 1, n);
      simd::stream_fence();
      for (std::size_t i = 0; i < dst.size(); ++i) {
        const bool inside = i >= offset && i < offset + n;
        ASSERT_EQ(dst.data()[i], inside ? src[i - offset + 1] : -1.0f) << "offset " << offset << ", n " << n << ", i " << i;
      }
    }
}

TEST(affinity, ranks_take_contiguous_disjoint_shares_as_equal_as_the_count_allows) {
  const std::vector<int> cpus = {0, 1, 2, 3, 4};
  EXPECT_EQ(plan_cores(cpus, {0, 2}).compute, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(plan_cores(cpus, {1, 2}).compute, (std::vector<int>{3, 4}));
  EXPECT_TRUE(plan_cores(cpus, {1, 2}).bind);
  EXPECT_FALSE(plan_cores(cpus, {1, 2}).oversubscribed);
  const CorePlan alone = plan_cores(cpus, {0, 1});
  EXPECT_EQ(alone.compute, cpus);
  EXPECT_EQ(alone.threads(), 5);
  EXPECT_FALSE(alone.bind) << "one rank alone is not bound by default";
  EXPECT_TRUE(plan_cores(cpus, {0, 1}, {.binding = Binding::always}).bind);
  EXPECT_FALSE(plan_cores(cpus, {0, 2}, {.binding = Binding::never}).bind);
  // Ids are the launcher's, not 0 .. n - 1.
  EXPECT_EQ(plan_cores(std::vector<int>{4, 6, 8, 10}, {1, 2}).compute, (std::vector<int>{8, 10}));
}

TEST(affinity, more_ranks_than_cores_take_one_unbound_thread_each_and_say_so) {
  const std::vector<int> cpus = {0, 1};
  const CorePlan third = plan_cores(cpus, {2, 3});
  EXPECT_TRUE(third.oversubscribed);
  EXPECT_FALSE(third.bind);
  EXPECT_EQ(third.compute, (std::vector<int>{0}));
  EXPECT_EQ(third.threads(), 1);
  EXPECT_NE(third.describe().find("oversubscribed"), std::string::npos) << third.describe();
}

// describe() says who bound the threads: under mpirun --bind-to core a rank alone on its one-core set is bound by
// the launcher, not "not bound" (issue 36's newcomer read that as wrong).
TEST(affinity, describe_says_whether_the_launcher_or_sinew_bound_the_threads) {
  CorePlan by_launcher = plan_cores(std::vector<int>{0}, {0, 1});
  by_launcher.launch_set = 1, by_launcher.host_cpus = 2;
  const std::string launcher = by_launcher.describe();
  EXPECT_NE(launcher.find("cores 0 (1 thread; the launcher bound this process to 1 of the host's 2 CPUs"),
            std::string::npos) << launcher;
  EXPECT_NE(launcher.find("sinew binds nothing more"), std::string::npos) << launcher;
  CorePlan by_sinew = plan_cores(std::vector<int>{0, 1}, {1, 2});
  by_sinew.launch_set = 2, by_sinew.host_cpus = 2;
  const std::string sinew = by_sinew.describe();
  EXPECT_NE(sinew.find("cores 1 (1 thread, bound by sinew, one thread a core: rank 1 of the 2 ranks sharing"),
            std::string::npos) << sinew;
  EXPECT_EQ(sinew.find("launcher"), std::string::npos) << sinew;
  CorePlan alone = plan_cores(std::vector<int>{0, 1}, {0, 1});
  alone.launch_set = 2, alone.host_cpus = 2;
  EXPECT_NE(alone.describe().find("(2 threads, not bound, the OS places them: it is the only rank"), std::string::npos)
      << alone.describe();
}

TEST(affinity, reserve_leaves_cores_for_loader_and_communication_but_never_all) {
  const std::vector<int> cpus = {0, 1, 2, 3, 4, 5, 6, 7};
  const CorePlan p = plan_cores(cpus, {1, 2}, {.reserve = 1});
  EXPECT_EQ(p.compute, (std::vector<int>{4, 5, 6}));
  EXPECT_EQ(p.reserved, (std::vector<int>{7}));
  EXPECT_NE(p.describe().find("cores 7 left for loader and communication"), std::string::npos) << p.describe();
  const CorePlan greedy = plan_cores(cpus, {0, 4}, {.reserve = 5});
  EXPECT_EQ(greedy.compute, (std::vector<int>{0}));
  EXPECT_EQ(greedy.reserved, (std::vector<int>{1}));
}

TEST(affinity, requested_threads_override_the_share_and_the_line_says_more_threads_than_cores) {
  CorePlan p = plan_cores(std::vector<int>{0, 1, 2, 3}, {0, 2});
  p.requested = 4;
  EXPECT_EQ(p.threads(), 4);
  EXPECT_NE(p.describe().find("more threads than cores"), std::string::npos) << p.describe();
}

// A thread bound to one of its CPUs sees only that CPU afterwards; the process's other threads are untouched.
TEST(affinity, bind_this_thread_pins_only_the_calling_thread) {
  const std::vector<int> before = allowed_cpus();
  ASSERT_FALSE(before.empty());
  std::vector<int> inside;
  std::thread t([&] {
    ASSERT_TRUE(bind_this_thread(std::span<const int>(&before.back(), 1)));
    inside = allowed_cpus();
  });
  t.join();
  EXPECT_EQ(inside, (std::vector<int>{before.back()}));
  EXPECT_EQ(allowed_cpus(), before);
}

// OpenMP thread t > 0 ends on cpus[t % size]; thread 0 (the caller) keeps its mask.
TEST(affinity, bind_openmp_threads_pins_each_worker_to_its_cpu) {
  const std::vector<int> cpus = allowed_cpus();
  if (cpus.size() < 2) GTEST_SKIP() << "needs 2 CPUs in this process's mask; it has " << cpus.size();
  const int threads = 2;
  bind_openmp_threads(threads, cpus);
  std::vector<std::vector<int>> seen(threads);
#pragma omp parallel num_threads(threads)
  seen[std::size_t(omp_get_thread_num())] = allowed_cpus();
  EXPECT_EQ(seen[0], cpus);
  EXPECT_EQ(seen[1], (std::vector<int>{cpus[1]}));
}

}  // namespace
