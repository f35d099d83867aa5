// sinew/core/elementwise.hpp: one loop body for SIMD batches and the scalar tail, on xsimd.
// In core/ because optim/, comm/ and the backends all use it.
//
//   simd::transform(n, [&](auto v, std::size_t i) {      // v is xsimd::batch<float> or float
//     using V = decltype(v);
//     simd::store(p + i, simd::load<V>(p + i) * 2.0f);
//   });
// The widest instruction set the compiler targets is used (-march=native gives AVX2 here).
#pragma once

#include <cmath>
#include <cstddef>

#include "sinew/core/detail/xsimd_compat.hpp"

namespace sinew::simd {

using batch = xsimd::batch<float>;
inline constexpr std::size_t kWidth = batch::size;

template <class V>
inline V load(const float* p) {
  if constexpr (std::is_same_v<V, float>)
    return *p;
  else
    return V::load_unaligned(p);
}
inline void store(float* p, batch v) { v.store_unaligned(p); }
inline void store(float* p, float v) { *p = v; }
inline batch sqrt(batch v) { return xsimd::sqrt(v); }
inline float sqrt(float v) { return std::sqrt(v); }
inline batch fma(batch a, batch b, batch c) { return xsimd::fma(a, b, c); }
inline float fma(float a, float b, float c) { return std::fma(a, b, c); }

/// Calls body(batch{}, i) for each full batch in [begin, end), then body(float{}, i) for the tail.
template <class F>
inline void transform(std::size_t begin, std::size_t end, F&& body) {
  std::size_t i = begin;
  for (; i + kWidth <= end; i += kWidth) body(batch{}, i);
  for (; i < end; ++i) body(0.0f, i);
}

/// out = a + b over n floats (out may alias a or b).
inline void add(const float* a, const float* b, float* out, std::size_t n) {
  transform(0, n, [&](auto v, std::size_t i) {
    using V = decltype(v);
    store(out + i, load<V>(a + i) + load<V>(b + i));
  });
}

/// The sum of n floats, in vector lanes (a scalar loop's one accumulator waits out an addition's latency per
/// float, which a bias gradient over a large batch feels).
inline float sum(const float* p, std::size_t n) {
  batch acc(0.0f);
  std::size_t i = 0;
  for (; i + kWidth <= n; i += kWidth) acc += batch::load_unaligned(p + i);
  float total = simd_compat::reduce_add(acc);
  for (; i < n; ++i) total += p[i];
  return total;
}

}  // namespace sinew::simd
