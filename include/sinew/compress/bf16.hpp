// sinew/compress/bf16.hpp: gradients sent as bfloat16 (torch's bf16_compress_hook).
//
//   using Strategy = sinew::dist::Compressed<sinew::dist::RingAllReduce<sinew::comm::Mpi>, sinew::compress::Bf16>;
//
// Every float becomes the nearest bfloat16 (the upper 16 bits of a float, rounded to nearest even): float's
// range with 8 significant bits, 2x fewer bytes. Unlike Fp16 no gradient overflows.
#pragma once

#include <bit>
#include <cstdint>
#include <string_view>

#include "sinew/compress/compressor_spec.hpp"
#include "sinew/compress/detail/cast.hpp"

namespace sinew::compress {

/// The bfloat16 nearest to `f` (ties to even); NaN stays NaN (quiet).
constexpr std::uint16_t to_bf16(float f) noexcept {
  const std::uint32_t x = std::bit_cast<std::uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return std::uint16_t((x >> 16) | 0x40u);
  return std::uint16_t((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

/// The float a bfloat16 holds (exact).
constexpr float from_bf16(std::uint16_t b) noexcept { return std::bit_cast<float>(std::uint32_t(b) << 16); }

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
