// sinew/compress/detail/cast.hpp: what Fp16 and Bf16 share: every float of every tensor cast to 16 bits, two to
// a word, all-gathered, widened and summed in rank order. No error feedback (torch's fp16/bf16 comm hooks have
// none either): the rounding error is a relative 2^-11 (fp16) or 2^-8 (bf16) of each value, unbiased.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "sinew/compress/compressor_spec.hpp"
#include "sinew/nets/tensor_layout.hpp"

namespace sinew::compress::detail {

/// Codec: kName, encode(float) -> std::uint16_t, decode(std::uint16_t) -> float.
template <class Codec>
class cast_compressor {
 public:
  /// for reports and the ranks' agreement
  static constexpr std::string_view kName = Codec::kName;
  /// the rounding is not carried over
  static constexpr bool kErrorFeedback = false;

  /// Remembers the tensors; sizes the buffers.
  void plan(std::span<const dist::ParamTensor> tensors, std::size_t) {
    tensors_.assign(tensors.begin(), tensors.end());
    values_ = 0;
    for (const dist::ParamTensor& t : tensors_) values_ += t.size();
    mine_.assign((values_ + 1) / 2, 0);
  }
  /// Two 16-bit values a word.
  std::size_t payload_words() const noexcept { return mine_.size(); }
  /// No error feedback.
  std::span<const float> residual() const noexcept { return {}; }

  /// Casts, all-gathers, widens and sums (see compressor_spec.hpp).
  template <req::gradient_exchange X>
  void reduce(std::span<float> grads, X& x) {
    const std::size_t ranks = std::size_t(x.ranks());
    std::fill(mine_.begin(), mine_.end(), 0u);
    std::size_t k = 0;
    for (const dist::ParamTensor& t : tensors_)
      for (std::size_t i = 0; i < t.size(); ++i, ++k)
        mine_[k / 2] |= std::uint32_t(Codec::encode(grads[t.offset + i])) << (16 * (k % 2));
    all_.resize(ranks * mine_.size());
    x.all_gather(mine_, all_);
    for (std::size_t r = 0; r < ranks; ++r) {
      const std::uint32_t* words = all_.data() + r * mine_.size();
      k = 0;
      for (const dist::ParamTensor& t : tensors_)
        for (std::size_t i = 0; i < t.size(); ++i, ++k) {
          const float v = Codec::decode(std::uint16_t(words[k / 2] >> (16 * (k % 2))));
          float& g = grads[t.offset + i];
          g = r == 0 ? v : g + v;
        }
    }
  }

 private:
  std::vector<dist::ParamTensor> tensors_;
  std::size_t values_ = 0;
  std::vector<std::uint32_t> mine_, all_;
};

}  // namespace sinew::compress::detail
