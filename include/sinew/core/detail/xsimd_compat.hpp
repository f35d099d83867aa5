// sinew/core/detail/xsimd_compat.hpp: xsimd, and the one place that knows which major sinew is built against.
//
// sinew builds on xsimd 8 (Debian 12) and 13 (Debian 13, and the vcpkg registry's). Two parts of the batch API
// sinew uses changed between them: xsimd 8's horizontal sum `hadd` became `reduce_add` (xsimd 13 has no `hadd`),
// and `bitwise_cast` took the batch type it casts to where it now takes the element type. Every header that
// vectorises with xsimd includes it through this one. (Majors 9 to 12 are not tested; the switch is at 10.)
#pragma once

#include "sinew/core/detail/vector_intrinsics.hpp"  // first: see its comment
#include <xsimd/xsimd.hpp>

static_assert(XSIMD_VERSION_MAJOR >= 8, "sinew needs xsimd 8 or later (Debian 12's libxsimd-dev is 8)");

namespace sinew::simd_compat {

/// The sum of a batch's lanes.
template <class T, class A>
inline T reduce_add(const xsimd::batch<T, A>& b) noexcept {
#if XSIMD_VERSION_MAJOR >= 10
  return xsimd::reduce_add(b);
#else
  return xsimd::hadd(b);
#endif
}

/// The same bits read as a batch of `To`.
template <class To, class T, class A>
inline xsimd::batch<To, A> bitwise_cast(const xsimd::batch<T, A>& b) noexcept {
#if XSIMD_VERSION_MAJOR >= 10
  return xsimd::bitwise_cast<To>(b);
#else
  return xsimd::bitwise_cast<xsimd::batch<To, A>>(b);
#endif
}

}  // namespace sinew::simd_compat
