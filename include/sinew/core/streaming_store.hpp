// sinew/core/streaming_store.hpp: copies that write around the caches, for arrays written whole and read again
// only after they have left them (a gradient hundreds of megabytes long that the optimizer reads later).
//
// Why: an ordinary store first reads the line it writes (read for ownership), so writing an array the caches cannot
// hold costs its size twice in memory traffic. Non-temporal stores fill whole lines in write-combining buffers and
// skip that read (figures: bench/results/2026-12-02-zen5-streamed-spread, VGG-16's folded head). Elsewhere than x86
// the copy is a plain one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "sinew/core/detail/vector_intrinsics.hpp"

namespace sinew::simd {

/// dst[0, n) = src[0, n), dst written with non-temporal stores where the CPU has them, of the widest vector the
/// build targets (src may be unaligned; the floats before dst's first vector boundary and the tail are ordinary
/// stores). A line written partly so and partly not goes to memory in pieces: callers stream whole 64-byte lines.
/// Call stream_fence() before another thread reads dst.
inline void stream_copy(float* dst, const float* src, std::size_t n) noexcept {
#if defined(__AVX512F__)
  constexpr std::size_t kLanes = 16;
#elif defined(__AVX__)
  constexpr std::size_t kLanes = 8;
#elif defined(__SSE2__)
  constexpr std::size_t kLanes = 4;
#else
  constexpr std::size_t kLanes = 0;
#endif
  std::size_t i = 0;
  if constexpr (kLanes > 0) {
    for (; i < n && reinterpret_cast<std::uintptr_t>(dst + i) % (kLanes * sizeof(float)) != 0; ++i) dst[i] = src[i];
    for (; i + kLanes <= n; i += kLanes) {
#if defined(__AVX512F__)
      _mm512_stream_ps(dst + i, _mm512_loadu_ps(src + i));
#elif defined(__AVX__)
      _mm256_stream_ps(dst + i, _mm256_loadu_ps(src + i));
#elif defined(__SSE2__)
      _mm_stream_ps(dst + i, _mm_loadu_ps(src + i));
#endif
    }
  }
  std::memcpy(dst + i, src + i, (n - i) * sizeof(float));
}

/// Orders this thread's non-temporal stores before its later stores (non-temporal stores are weakly ordered: the
/// barrier at the end of a parallel region alone does not make them visible to the other threads).
inline void stream_fence() noexcept {
#if defined(__SSE2__)
  _mm_sfence();
#endif
}

}  // namespace sinew::simd
