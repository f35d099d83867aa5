// sinew/tensor/buffer.hpp: 64-byte-aligned float storage and spans into it.
//
// Parameters, gradients and optimizer state of a network live in one aligned buffer each; layers and
// optimizers see spans of them. 64 bytes is a cache line and the widest SIMD register (AVX-512).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <span>

namespace sinew {

inline constexpr std::size_t kAlignment = 64;                              ///< bytes
inline constexpr std::size_t kAlignFloats = kAlignment / sizeof(float);    ///< floats per aligned block

/// n rounded up to a whole number of aligned blocks of floats.
constexpr std::size_t align_floats(std::size_t n) { return (n + kAlignFloats - 1) / kAlignFloats * kAlignFloats; }

namespace detail {
struct aligned_free {
  void operator()(void* p) const noexcept { std::free(p); }
};
}  // namespace detail

/// A fixed-size, zero-initialised, 64-byte-aligned array of T. Movable, not copyable (copies are explicit).
template <class T = float>
class AlignedBuffer {
 public:
  AlignedBuffer() = default;
  /// n zero-initialised elements.
  explicit AlignedBuffer(std::size_t n) : size_(n) {
    if (n == 0) return;
    const std::size_t bytes = (n * sizeof(T) + kAlignment - 1) / kAlignment * kAlignment;
    void* p = std::aligned_alloc(kAlignment, bytes);
    if (!p) throw std::bad_alloc();
    std::memset(p, 0, bytes);
    data_.reset(static_cast<T*>(p));
  }

  /// Access as a contiguous range of size() elements.
  /// @{
  T* data() noexcept { return data_.get(); }
  const T* data() const noexcept { return data_.get(); }
  std::size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }
  T& operator[](std::size_t i) noexcept { return data_.get()[i]; }
  const T& operator[](std::size_t i) const noexcept { return data_.get()[i]; }
  T* begin() noexcept { return data(); }
  T* end() noexcept { return data() + size_; }
  const T* begin() const noexcept { return data(); }
  const T* end() const noexcept { return data() + size_; }

  std::span<T> span() noexcept { return {data(), size_}; }
  std::span<const T> span() const noexcept { return {data(), size_}; }
  operator std::span<T>() noexcept { return span(); }
  operator std::span<const T>() const noexcept { return span(); }
  /// @}

  /// Sets every element to v.
  void fill(T v) noexcept { std::fill(begin(), end(), v); }

 private:
  std::unique_ptr<T, detail::aligned_free> data_;
  std::size_t size_ = 0;
};

}  // namespace sinew
