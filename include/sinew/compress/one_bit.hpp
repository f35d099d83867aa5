// sinew/compress/one_bit.hpp: 1-bit SGD (Seide, Fu, Droppo, Li and Yu, "1-Bit Stochastic Gradient Descent and
// its Application to Data-Parallel Distributed Training of Speech DNNs", Interspeech 2014), CNTK's compression.
//
//   using Strategy = sinew::dist::Compressed<sinew::dist::MpiAllReduce<sinew::comm::Mpi>, sinew::compress::OneBit>;
//
// Each value of the gradient, plus the error carried from the last step, is sent as one bit: whether it is
// >= 0. Each column of each tensor (nets/tensor_layout.hpp: the rows values one input feeds) sends two floats
// with its bits, the mean of its values >= 0 and the mean of its values < 0, and a bit decodes to the mean of
// its side: the reconstruction that makes the column's quantisation error smallest in the mean-square sense
// for that threshold, and keeps the column's sum. What the bits left out (value - decoded value) is added to
// the next step's gradient before quantising (error feedback): no part of a gradient is lost, only delayed.
//
// Payload per tensor of rows x cols: 2 cols floats and rows x cols bits, packed 32 to a word in the tensor's
// order; a vector (rows x 1) sends two floats for all its values. A tensor of rows x cols thus shrinks
// 32 rows / (rows + 64) times: 16x for 64 rows, 28x for 512 (ResNet-18's last stage, most of its weights).
//
// Exactness of the error feedback: with e = gradient + residual, a value sends q (its side's mean) and keeps
// residual = e - q, both computed in float, so applied + residual differs from gradient + old residual by the
// two roundings of e and of e - q, at most 2^-24 (|e| + |e - q|) per value and step; tests/compress checks the
// identity to that bound over several steps.
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "sinew/compress/compressor_spec.hpp"
#include "sinew/nets/tensor_layout.hpp"

namespace sinew::compress {

/// 1-bit SGD with per-column scales and error feedback (see the top of compress/one_bit.hpp).
class OneBit {
 public:
  /// for reports and the ranks' agreement
  static constexpr std::string_view kName = "onebit";
  /// the quantisation error is carried into the next step
  static constexpr bool kErrorFeedback = true;

  /// Sizes the payload and zeroes the residual.
  void plan(std::span<const dist::ParamTensor> tensors, std::size_t total) {
    tensors_.assign(tensors.begin(), tensors.end());
    residual_.assign(total, 0.0f);
    std::size_t words = 0;
    for (const dist::ParamTensor& t : tensors_) words += words_of(t);
    mine_.assign(words, 0u);
  }
  /// 2 cols + ceil(rows cols / 32) words a tensor.
  std::size_t payload_words() const noexcept { return mine_.size(); }
  /// What the last payload left out, laid out as the gradients.
  std::span<const float> residual() const noexcept { return residual_; }
  /// For checkpoints: the residual (compressor_spec.hpp).
  NamedState checkpoint_state() { return {{{"residual", residual_}}, {}, {}}; }

  /// The payload of one tensor: `values` (rows x cols, row-major) quantised into `words` (2 cols scale floats,
  /// then the bits); `values` becomes the quantisation error. Exposed for tests.
  static void encode(std::span<float> values, std::size_t rows, std::size_t cols, std::span<std::uint32_t> words) {
    std::vector<double> sum_pos(cols, 0.0), sum_neg(cols, 0.0);
    std::vector<std::size_t> n_pos(cols, 0);
    for (std::size_t i = 0; i < rows; ++i)
      for (std::size_t j = 0; j < cols; ++j) {
        const float v = values[i * cols + j];
        if (v >= 0.0f)
          sum_pos[j] += v, ++n_pos[j];
        else
          sum_neg[j] += v;
      }
    std::uint32_t* bits = words.data() + 2 * cols;
    std::fill(bits, words.data() + words.size(), 0u);
    for (std::size_t j = 0; j < cols; ++j) {
      const std::size_t n_neg = rows - n_pos[j];
      words[2 * j] = std::bit_cast<std::uint32_t>(n_pos[j] ? float(sum_pos[j] / double(n_pos[j])) : 0.0f);
      words[2 * j + 1] = std::bit_cast<std::uint32_t>(n_neg ? float(sum_neg[j] / double(n_neg)) : 0.0f);
    }
    // Row by row, as the values lie (k = i cols + j): no division per value.
    for (std::size_t i = 0, k = 0; i < rows; ++i)
      for (std::size_t j = 0; j < cols; ++j, ++k) {
        const bool positive = values[k] >= 0.0f;
        bits[k / 32] |= std::uint32_t(positive) << (k % 32);
        values[k] -= std::bit_cast<float>(words[2 * j + (positive ? 0 : 1)]);
      }
  }

  /// Adds (or with `assign`, writes) the values one tensor's payload decodes to.
  static void decode(std::span<const std::uint32_t> words, std::size_t rows, std::size_t cols, std::span<float> out,
                     bool assign) {
    const std::uint32_t* bits = words.data() + 2 * cols;
    for (std::size_t i = 0, k = 0; i < rows; ++i)
      for (std::size_t j = 0; j < cols; ++j, ++k) {
        const bool positive = (bits[k / 32] >> (k % 32)) & 1u;
        const float v = std::bit_cast<float>(words[2 * j + (positive ? 0 : 1)]);
        out[k] = assign ? v : out[k] + v;
      }
  }

  /// Quantises gradient + residual, all-gathers, decodes and sums in rank order (see compressor_spec.hpp).
  template <req::gradient_exchange X>
  void reduce(std::span<float> grads, X& x) {
    std::size_t w = 0;
    for (const dist::ParamTensor& t : tensors_) {
      const std::span<float> e(residual_.data() + t.offset, t.size());
      for (std::size_t i = 0; i < t.size(); ++i) e[i] += grads[t.offset + i];
      encode(e, t.rows, t.cols, std::span<std::uint32_t>(mine_).subspan(w, words_of(t)));
      w += words_of(t);
    }
    const std::size_t ranks = std::size_t(x.ranks());
    all_.resize(ranks * mine_.size());
    x.all_gather(mine_, all_);
    for (std::size_t r = 0; r < ranks; ++r) {
      w = r * mine_.size();
      for (const dist::ParamTensor& t : tensors_) {
        decode(std::span<const std::uint32_t>(all_).subspan(w, words_of(t)), t.rows, t.cols,
               grads.subspan(t.offset, t.size()), r == 0);
        w += words_of(t);
      }
    }
  }

 private:
  static std::size_t words_of(const dist::ParamTensor& t) { return 2 * t.cols + (t.size() + 31) / 32; }

  std::vector<dist::ParamTensor> tensors_;
  std::vector<float> residual_;
  std::vector<std::uint32_t> mine_, all_;
};
static_assert(CompressorPolicy<OneBit>);

}  // namespace sinew::compress
