// sinew/compress/fp16.hpp: gradients sent as IEEE 754 half precision (torch's fp16_compress_hook).
//
//   using Strategy = sinew::dist::Compressed<sinew::dist::RingAllReduce<sinew::comm::Mpi>, sinew::compress::Fp16>;
//
// Every float becomes the nearest half (ties to even): 16 bits, 2x fewer bytes. A half holds 11 significant
// bits and magnitudes from 6e-8 (subnormal) to 65504; a gradient beyond that becomes infinite and the trainer
// stops on the NaN it makes, so use Bf16 (float's range) where gradients can be that large. Written with integer
// operations, not _Float16 or F16C, so that it runs on every x86-64 and compiles with every compiler sinew
// supports.
#pragma once

#include <bit>
#include <cstdint>
#include <string_view>

#include "sinew/compress/compressor_spec.hpp"
#include "sinew/compress/detail/cast.hpp"

namespace sinew::compress {

/// The half nearest to `f` (ties to even); beyond 65504 infinite; NaN stays NaN (quiet).
constexpr std::uint16_t to_fp16(float f) noexcept {
  std::uint32_t x = std::bit_cast<std::uint32_t>(f);
  const std::uint32_t sign = (x >> 16) & 0x8000u;
  x &= 0x7fffffffu;
  if (x >= 0x47800000u) return std::uint16_t(sign | (x > 0x7f800000u ? 0x7e00u : 0x7c00u));  // >= 65536, inf, NaN
  if (x < 0x38800000u) {
    // Below 2^-14: a subnormal half. Adding 0.5f puts the half's last bit (2^-24) at float's last bit, and the
    // float addition rounds to nearest even, as the half must.
    const float aligned = std::bit_cast<float>(x) + 0.5f;
    return std::uint16_t(sign | (std::bit_cast<std::uint32_t>(aligned) - 0x3f000000u));
  }
  // Normal: rebias the exponent (127 -> 15) and round the 13 dropped bits to nearest, ties to even (a carry
  // into the exponent is the right result, up to infinity for [65520, 65536)).
  const std::uint32_t odd = (x >> 13) & 1u;
  x += 0xc8000000u + 0x0fffu + odd;
  return std::uint16_t(sign | (x >> 13));
}

/// The float a half holds (exact).
constexpr float from_fp16(std::uint16_t h) noexcept {
  const std::uint32_t sign = std::uint32_t(h & 0x8000u) << 16, exponent = (h >> 10) & 0x1fu, mantissa = h & 0x3ffu;
  if (exponent == 0) {
    const float magnitude = float(mantissa) * 0x1p-24f;  // zero or subnormal: mantissa x 2^-24, exact
    return std::bit_cast<float>(sign | std::bit_cast<std::uint32_t>(magnitude));
  }
  if (exponent == 31) return std::bit_cast<float>(sign | 0x7f800000u | (mantissa << 13));
  return std::bit_cast<float>(sign | ((exponent + 112) << 23) | (mantissa << 13));
}

namespace detail {
struct fp16_codec {
  static constexpr std::string_view kName = "fp16";
  static constexpr std::uint16_t encode(float f) noexcept { return to_fp16(f); }
  static constexpr float decode(std::uint16_t h) noexcept { return from_fp16(h); }
};
}  // namespace detail

/// Half-precision gradients: 16 bits a value, no error feedback (see the top of compress/fp16.hpp).
struct Fp16 : detail::cast_compressor<detail::fp16_codec> {};
static_assert(CompressorPolicy<Fp16>);

}  // namespace sinew::compress
