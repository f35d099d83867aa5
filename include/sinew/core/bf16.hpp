// sinew/core/bf16.hpp: the bfloat16 number format, one float's upper 16 bits. Both its users round the same way:
// gradients sent compressed (compress/bf16.hpp) and OneDnn's own layout conversions (backend/onednn/reorder.hpp).
#pragma once

#include <bit>
#include <cstdint>

namespace sinew {

/// The bfloat16 nearest to `f` (ties to even); NaN stays NaN (quiet).
constexpr std::uint16_t to_bf16(float f) noexcept {
  const std::uint32_t x = std::bit_cast<std::uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return std::uint16_t((x >> 16) | 0x40u);
  return std::uint16_t((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

/// The float a bfloat16 holds (exact).
constexpr float from_bf16(std::uint16_t b) noexcept { return std::bit_cast<float>(std::uint32_t(b) << 16); }

}  // namespace sinew
