// The compressors on their own, one process (compress::example::single_rank as the exchange): Fp16 and Bf16
// round trips, OneBit's per-column scales on a matrix checked by hand, the error feedback identity of OneBit and
// PowerSgd over several steps, and PowerSgd recovering a matrix of low rank exactly. The compressors across
// ranks: tests/dist/test_compressed.cpp.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "sinew/compress.hpp"
#include "sinew/core/rng.hpp"

namespace {
using namespace sinew;
using compress::example::single_rank;

TEST(compress, fp16_every_half_survives_the_round_trip_through_float) {
  for (std::uint32_t h = 0; h < 0x10000u; ++h) {
    const float f = compress::from_fp16(std::uint16_t(h));
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(compress::from_fp16(compress::to_fp16(f)))) << h;
      continue;
    }
    ASSERT_EQ(compress::to_fp16(f), h) << "half 0x" << std::hex << h << " = " << f;
  }
  EXPECT_EQ(compress::from_fp16(0x3c00), 1.0f);
  EXPECT_EQ(compress::from_fp16(0x7bff), 65504.0f);
  EXPECT_EQ(compress::from_fp16(0x0001), std::ldexp(1.0f, -24));  // the smallest subnormal
}

TEST(compress, fp16_rounds_to_nearest_even_and_overflows_to_infinity) {
  const float ulp1 = std::ldexp(1.0f, -10);  // a half's spacing at 1
  EXPECT_EQ(compress::from_fp16(compress::to_fp16(1.0f + ulp1 / 2)), 1.0f) << "a tie goes to the even 1";
  EXPECT_EQ(compress::from_fp16(compress::to_fp16(1.0f + 3 * ulp1 / 2)), 1.0f + 2 * ulp1) << "a tie goes to even";
  EXPECT_EQ(compress::from_fp16(compress::to_fp16(1.0f + ulp1 * 0.51f)), 1.0f + ulp1);
  EXPECT_EQ(compress::from_fp16(compress::to_fp16(-65519.0f)), -65504.0f);
  EXPECT_TRUE(std::isinf(compress::from_fp16(compress::to_fp16(65520.0f))));
  EXPECT_EQ(compress::from_fp16(compress::to_fp16(std::ldexp(1.0f, -25))), 0.0f) << "half the smallest: tie to 0";
  EXPECT_EQ(compress::from_fp16(compress::to_fp16(std::ldexp(3.0f, -25))), std::ldexp(1.0f, -23));
  Rng rng(3);
  for (int i = 0; i < 100000; ++i) {
    const float f = std::ldexp(rng.uniform(-1.0f, 1.0f), int(rng.below(40)) - 24);
    const float back = compress::from_fp16(compress::to_fp16(f));
    const float spacing = std::ldexp(1.0f, std::max(std::ilogb(f), -14) - 10);
    ASSERT_LE(std::abs(back - f), spacing / 2) << f;
  }
}

TEST(compress, bf16_keeps_floats_range_and_8_significant_bits) {
  for (std::uint32_t b = 0; b < 0x10000u; ++b) {
    const float f = compress::from_bf16(std::uint16_t(b));
    if (!std::isnan(f)) {
      ASSERT_EQ(compress::to_bf16(f), b);
    }
  }
  EXPECT_EQ(compress::from_bf16(compress::to_bf16(1.0f + std::ldexp(1.0f, -8))), 1.0f) << "tie to even";
  const float big = compress::from_bf16(compress::to_bf16(3e38f));
  EXPECT_LE(std::abs(big - 3e38f), 3e38f * std::ldexp(1.0f, -9)) << "no overflow where fp16 would: " << big;
  EXPECT_TRUE(std::isnan(compress::from_bf16(compress::to_bf16(std::numeric_limits<float>::quiet_NaN()))));
  Rng rng(4);
  for (int i = 0; i < 100000; ++i) {
    const float f = rng.uniform(-1e6f, 1e6f);
    ASSERT_LE(std::abs(compress::from_bf16(compress::to_bf16(f)) - f), std::abs(f) * std::ldexp(1.0f, -8)) << f;
  }
}

TEST(compress, fp16_and_bf16_compressors_send_two_values_a_word_and_decode_what_they_cast) {
  std::vector<float> g = {1.0f, -2.5f, 1e-3f, 3.14159f, 0.0f, 7.0f, 100.5f};
  const dist::ParamTensor tensors[] = {{0, 3, 1}, {4, 1, 3}};  // g[3] lies between the tensors
  compress::Fp16 fp16;
  fp16.plan(tensors, g.size());
  EXPECT_EQ(fp16.payload_words(), 3u);
  std::vector<float> h = g;
  single_rank x;
  fp16.reduce(h, x);
  for (std::size_t i : {0, 1, 2, 4, 5, 6}) EXPECT_EQ(h[i], compress::from_fp16(compress::to_fp16(g[i]))) << i;
  EXPECT_EQ(h[3], g[3]) << "outside every tensor: untouched by the compressor";
  compress::Bf16 bf16;
  bf16.plan(tensors, g.size());
  h = g;
  bf16.reduce(h, x);
  for (std::size_t i : {0, 1, 2, 4, 5, 6}) EXPECT_EQ(h[i], compress::from_bf16(compress::to_bf16(g[i]))) << i;
  EXPECT_NE(h[2], g[2]) << "1e-3 is not a bfloat16";
}

TEST(compress, onebit_scales_each_column_by_the_means_of_its_two_sides) {
  // 3 rows x 2 columns, row-major. Column 0: 1, -2, 3 -> positives mean 2, negatives mean -2.
  // Column 1: -1, -3, 0.5 -> positives (>= 0) mean 0.5, negatives mean -2.
  std::vector<float> m = {1.0f, -1.0f, -2.0f, -3.0f, 3.0f, 0.5f};
  std::vector<std::uint32_t> words(2 * 2 + 1);
  compress::OneBit::encode(m, 3, 2, words);
  EXPECT_EQ(std::bit_cast<float>(words[0]), 2.0f);
  EXPECT_EQ(std::bit_cast<float>(words[1]), -2.0f);
  EXPECT_EQ(std::bit_cast<float>(words[2]), 0.5f);
  EXPECT_EQ(std::bit_cast<float>(words[3]), -2.0f);
  EXPECT_EQ(words[4], 0b110001u) << "bit k: value k >= 0 (values 0, 4 and 5)";
  const std::vector<float> error = {1.0f - 2.0f, -1.0f + 2.0f, -2.0f + 2.0f, -3.0f + 2.0f, 3.0f - 2.0f, 0.0f};
  EXPECT_EQ(m, error) << "encode leaves the quantisation error";
  std::vector<float> decoded(6);
  compress::OneBit::decode(words, 3, 2, decoded, true);
  EXPECT_EQ(decoded, (std::vector<float>{2.0f, -2.0f, -2.0f, -2.0f, 2.0f, 0.5f}));
  // A column with one side only decodes to its mean; the empty side sends 0.
  std::vector<float> same = {4.0f, 2.0f};
  std::vector<std::uint32_t> w2(2 + 1);
  compress::OneBit::encode(same, 2, 1, w2);
  EXPECT_EQ(std::bit_cast<float>(w2[0]), 3.0f);
  EXPECT_EQ(std::bit_cast<float>(w2[1]), 0.0f);
  EXPECT_EQ(w2[2], 0b11u);
}

/// Over `steps` steps of random gradients of several magnitudes: sum(applied) + residual == sum(gradients),
/// to the rounding bound of the headers: `roundings` x 2^-24 (|e| + |residual| + |applied|) per value and step,
/// e = gradient + residual (OneBit rounds e and e - q once each; PowerSgd<r> rounds e once and each of the r
/// terms it subtracts and adds once). The residual must be large for the identity to mean much.
template <class C>
void expect_error_feedback_keeps_every_gradient(std::size_t steps, double roundings) {
  const std::vector<dist::ParamTensor> tensors = {{0, 16, 24}, {400, 16, 1}, {448, 8, 40}};
  const std::size_t total = 800;
  C c;
  c.plan(tensors, total);
  std::vector<double> applied(total, 0.0), truth(total, 0.0), bound(total, 0.0), residual(total, 0.0);
  Rng rng(11);
  single_rank x;
  for (std::size_t s = 0; s < steps; ++s) {
    std::vector<float> g(total, 0.0f);
    for (const dist::ParamTensor& t : tensors)
      for (std::size_t i = 0; i < t.size(); ++i) g[t.offset + i] = rng.uniform(-1.0f, 1.0f) * float(1 + i % 7);
    for (std::size_t i = 0; i < total; ++i) {
      truth[i] += g[i];
      bound[i] += roundings * std::ldexp(std::abs(double(g[i]) + residual[i]), -24);
    }
    c.reduce(g, x);
    for (const dist::ParamTensor& t : tensors)
      for (std::size_t i = t.offset; i < t.end(); ++i) {
        applied[i] += g[i];
        residual[i] = c.residual()[i];
        bound[i] += roundings * std::ldexp(std::abs(residual[i]) + std::abs(double(g[i])), -24);
      }
  }
  double largest_residual = 0;
  for (const dist::ParamTensor& t : tensors)
    for (std::size_t i = t.offset; i < t.end(); ++i) {
      ASSERT_LE(std::abs(applied[i] + residual[i] - truth[i]), bound[i] + 1e-12) << C::kName << " value " << i;
      largest_residual = std::max(largest_residual, std::abs(residual[i]));
    }
  EXPECT_GT(largest_residual, 0.1) << "the residual must matter for the identity to mean much";
}

TEST(compress, onebit_error_feedback_keeps_the_sum_of_applied_and_residual_equal_to_the_gradients_over_20_steps) {
  expect_error_feedback_keeps_every_gradient<compress::OneBit>(20, 1);
}

TEST(compress, powersgd_error_feedback_keeps_the_sum_of_applied_and_residual_equal_to_the_gradients_over_20_steps) {
  expect_error_feedback_keeps_every_gradient<compress::PowerSgd<2>>(20, 3);
}

TEST(compress, powersgd_sends_vectors_and_small_matrices_as_they_are_and_finds_a_low_rank_matrix) {
  // 32 x 48 of rank 2 (two outer products); a 2 x 3 matrix (too small to gain) and a vector of 5.
  const std::vector<dist::ParamTensor> tensors = {{0, 32, 48}, {1536, 2, 3}, {1552, 5, 1}};
  const std::size_t total = 1560;
  std::vector<float> g(total, 0.0f);
  for (std::size_t i = 0; i < 32; ++i)
    for (std::size_t j = 0; j < 48; ++j) g[i * 48 + j] = float(i + 1) * float(j % 5) - 0.25f * float(i % 3) * float(j);
  for (std::size_t i = 1536; i < 1542; ++i) g[i] = float(i) * 0.5f;
  for (std::size_t i = 1552; i < 1557; ++i) g[i] = -float(i);
  compress::PowerSgd<2> c;
  c.plan(tensors, total);
  EXPECT_EQ(c.payload_words(), 6u + 5u + 2u * 32u + 2u * 48u) << "plain floats, then P (32 x 2) and Q (48 x 2)";
  single_rank x;
  std::vector<float> h = g;
  c.reduce(h, x);
  for (std::size_t i = 1536; i < 1542; ++i) EXPECT_EQ(h[i], g[i]) << "sent as it is";
  for (std::size_t i = 1552; i < 1557; ++i) EXPECT_EQ(h[i], g[i]) << "sent as it is";
  // One power iteration from a random Q spans the rank-2 column space: the approximation is the matrix.
  double err = 0, norm = 0;
  for (std::size_t i = 0; i < 1536; ++i) err += std::pow(h[i] - g[i], 2), norm += std::pow(g[i], 2);
  EXPECT_LT(std::sqrt(err / norm), 1e-5);
  // A rank-1 approximation of the same matrix cannot be exact: the residual keeps the rest.
  compress::PowerSgd<1> one;
  one.plan(tensors, total);
  h = g;
  one.reduce(h, x);
  double left = 0;
  for (std::size_t i = 0; i < 1536; ++i) left += std::pow(one.residual()[i], 2);
  EXPECT_GT(std::sqrt(left / norm), 1e-2);
}

}  // namespace
