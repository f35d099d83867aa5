// sinew/compress/bf16.hpp: gradients sent as bfloat16 (torch's bf16_compress_hook).
//
//   using Strategy = sinew::dist::Compressed<sinew::dist::RingAllReduce<sinew::comm::Mpi>, sinew::compress::Bf16>;
//
// Every float becomes the nearest bfloat16 (the upper 16 bits of a float, rounded to nearest even): float's
// range with 8 significant bits, 2x fewer bytes. Unlike Fp16 no gradient overflows.
#pragma once

#include <cstdint>
#include <string_view>

#include "sinew/compress/compressor_spec.hpp"
#include "sinew/compress/detail/cast.hpp"
#include "sinew/core/bf16.hpp"

namespace sinew::compress {

// The rounding every bf16 of sinew shares (core/bf16.hpp).
using sinew::from_bf16;
using sinew::to_bf16;

namespace detail {
struct bf16_codec {
  static constexpr std::string_view kName = "bf16";
  static constexpr std::uint16_t encode(float f) noexcept { return to_bf16(f); }
  static constexpr float decode(std::uint16_t b) noexcept { return from_bf16(b); }
};
}  // namespace detail

/// bfloat16 gradients: 16 bits a value, no error feedback (see the top of compress/bf16.hpp).
struct Bf16 : detail::cast_compressor<detail::bf16_codec> {};
static_assert(CompressorPolicy<Bf16>);

}  // namespace sinew::compress
