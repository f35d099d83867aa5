// sinew/core/detail/vector_intrinsics.hpp: the x86 vector intrinsics, included once before xsimd, Eigen and
// oneDNN, with GCC 12's uninitialized-variable warnings off for their text.
//
// Why: GCC 12's AVX-512 intrinsics build many results from _mm512_undefined_*() (a variable initialised with
// itself), and GCC 12 reports each place such an intrinsic is inlined into, through xsimd or Eigen's gemm
// kernel, as "'__Y' may be used uninitialized" (GCC bug 105593, fixed in GCC 13): hundreds of notes per build
// that a user cannot tell from real problems. GCC decides whether to warn by the pragma state at the location
// of the warned statement, which is inside <immintrin.h>; including it here first, under the pragma, silences
// exactly those notes and leaves the warnings on for every other line, sinew's own included.
#pragma once

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
