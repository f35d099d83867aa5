// sinew/backend/simd/dropout.hpp: dropout's mask, forward and backward on raw float arrays of any layout.
//
// The mask is counter-based: element i is kept when a hash of (i, seed) clears the threshold p. Nothing is
// stored between forward and backward (backward recomputes the mask from the seed), and the mask is the same
// for any split over threads. The hash is two rounds of Wellons' lowbias32 (bias 0.17 on the avalanche test),
// keyed by the two halves of the seed; its top 24 bits are compared with p * 2^24.
#pragma once

#include <cstddef>
#include <cstdint>

#include "sinew/core/elementwise.hpp"
#include "sinew/core/parallel.hpp"

namespace sinew::simd {

namespace detail {
using index_batch = xsimd::batch<std::uint32_t>;
static_assert(index_batch::size == kWidth, "dropout: index and float batches must have the same width");

template <class U>
inline U lowbias32(U x) {
  x = (x ^ (x >> 16)) * U(0x7feb352du);
  x = (x ^ (x >> 15)) * U(0x846ca68bu);
  return x ^ (x >> 16);
}
template <class U>
inline U dropout_bits(U i, std::uint64_t seed) {
  return lowbias32(lowbias32(i ^ U(std::uint32_t(seed))) ^ U(std::uint32_t(seed >> 32)));
}

/// dst[i] = keep(i) ? src[i] * scale : 0 over [0, n).
inline void dropout_apply(const float* src, float* dst, std::size_t n, float p, std::uint64_t seed) {
  const float threshold = p * 16777216.0f, scale = p < 1 ? 1.0f / (1.0f - p) : 0.0f;
  alignas(64) static constexpr std::uint32_t kIota[16] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
  static_assert(kWidth <= 16);
  parallel_ranges(n, [&](std::size_t begin, std::size_t end) {
    transform(begin, end, [&](auto v, std::size_t i) {
      using V = decltype(v);
      if constexpr (std::is_same_v<V, float>) {
        const float u = float(dropout_bits(std::uint32_t(i), seed) >> 8);
        dst[i] = u >= threshold ? src[i] * scale : 0.0f;
      } else {
        const index_batch idx = index_batch(std::uint32_t(i)) + index_batch::load_aligned(kIota);
        const V u = xsimd::to_float(simd_compat::bitwise_cast<std::int32_t>(dropout_bits(idx, seed) >> 8));
        store(dst + i, xsimd::select(u >= V(threshold), load<V>(src + i) * V(scale), V(0.0f)));
      }
    });
  });
}

/// dst[k] = keep(first + k * stride) ? src[k] * scale : 0 for k in [0, count), on the calling thread: the mask of
/// a run of elements whose logical (plain NCHW) indices are an arithmetic sequence, so a kernel working on
/// another memory layout (the channels of one NHWC pixel: stride H * W) draws the same mask per element.
inline void dropout_apply_indexed(const float* src, float* dst, std::size_t count, std::uint32_t first,
                                  std::uint32_t stride, float p, std::uint64_t seed) {
  const float threshold = p * 16777216.0f, scale = p < 1 ? 1.0f / (1.0f - p) : 0.0f;
  alignas(64) static constexpr std::uint32_t kIota[16] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
  const index_batch offsets = index_batch::load_aligned(kIota) * index_batch(stride);
  transform(0, count, [&](auto v, std::size_t k) {
    using V = decltype(v);
    const std::uint32_t at = first + std::uint32_t(k) * stride;
    if constexpr (std::is_same_v<V, float>) {
      const float u = float(dropout_bits(at, seed) >> 8);
      dst[k] = u >= threshold ? src[k] * scale : 0.0f;
    } else {
      const index_batch idx = index_batch(at) + offsets;
      const V u = xsimd::to_float(simd_compat::bitwise_cast<std::int32_t>(dropout_bits(idx, seed) >> 8));
      store(dst + k, xsimd::select(u >= V(threshold), load<V>(src + k) * V(scale), V(0.0f)));
    }
  });
}
}  // namespace detail

/// Whether element i survives dropout with probability p under `seed` (the scalar reference of the kernels).
inline bool dropout_keeps(std::size_t i, float p, std::uint64_t seed) {
  return float(detail::dropout_bits(std::uint32_t(i), seed) >> 8) >= p * 16777216.0f;
}

/// y = mask * x / (1 - p); y may alias x.
inline void dropout_forward(const float* x, float* y, std::size_t n, float p, std::uint64_t seed) {
  detail::dropout_apply(x, y, n, p, seed);
}

/// dx = mask * dy / (1 - p), with the mask of the forward pass that used the same seed; dx may alias dy.
inline void dropout_backward(const float* dy, float* dx, std::size_t n, float p, std::uint64_t seed) {
  detail::dropout_apply(dy, dx, n, p, seed);
}

}  // namespace sinew::simd
