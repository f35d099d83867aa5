// sinew/core/fixed_string.hpp: a string literal as a template argument, Named<"fc", Dense<10>>.
#pragma once

#include <algorithm>
#include <cstddef>
#include <string_view>

namespace sinew {

/// A string literal that C++20 accepts as a non-type template parameter.
template <std::size_t N>
struct fixed_string {
  /// The characters, with the terminating zero.
  char chars[N]{};

  /// From a string literal (implicitly, so `Named<"fc", L>` works).
  constexpr fixed_string(const char (&s)[N]) { std::copy_n(s, N, chars); }
  /// The characters without the terminating zero.
  constexpr std::string_view view() const noexcept { return {chars, N - 1}; }
  /// Whether it is "".
  constexpr bool empty() const noexcept { return N <= 1; }
};

}  // namespace sinew
