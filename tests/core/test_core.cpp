// Core utilities: the seeded RNG, aligned buffers, the JSON writer.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <set>
#include <vector>

#include "sinew/core.hpp"
#include "sinew/core/parallel.hpp"
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

}  // namespace
