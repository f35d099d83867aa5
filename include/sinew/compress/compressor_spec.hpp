// sinew/compress/compressor_spec.hpp: what a gradient compressor must provide to dist::Compressed.
//
//   using Strategy = sinew::dist::Compressed<sinew::dist::MpiAllReduce<sinew::comm::Mpi>, sinew::compress::OneBit>;
//
// Contract. A compressor C turns every rank's gradient into a payload of 32-bit words, has the exchange
// all-gather the payloads, and decodes and sums them; every rank decodes the same words in the same order
// (rank 0, 1, ...), so every rank ends with the same floats, bit for bit.
//   C::kName                         "onebit", "fp16", ... for reports and the ranks' agreement.
//   C::kErrorFeedback                whether it carries what a step's payload left out into the next step.
//   C c;                             default-constructible; all its settings are template arguments.
//   c.plan(tensors, total)           once, before the first reduce: the parameter tensors (nets/tensor_layout.hpp:
//                                    ascending, disjoint, inside [0, total)) it compresses; floats outside
//                                    every tensor are the strategy's (it sets them to zero).
//   c.reduce(grads, exchange)        every step, collective over the exchange: on return grads[t] holds, for
//                                    every tensor t, the sum over the ranks of the gradient each rank's
//                                    payload decodes to. grads.size() is plan()'s total on every rank.
//   c.residual()                     with error feedback: a span of `total` floats, what this rank's last
//                                    payload left out (added to its next gradient before compressing);
//                                    without: an empty span. Error feedback keeps, on every rank,
//                                    sum over steps of (what the rank's payloads decoded to) + residual()
//                                    == sum over steps of its true gradients, up to float rounding.
//   c.payload_words()                the words this rank contributes to the all-gathers of one step.
// Optional, for checkpoints (req::has_compressor_state): c.checkpoint_state() -> NamedState, views of what it
// carries from step to step (the residual; PowerSGD's warm-start Qs), valid after plan(); dist::Compressed
// saves them under "compressor." and a resume writes them back in place, so a resumed run continues bit for bit.
// An exchange X (req::gradient_exchange) is what the strategy hands reduce():
//   x.ranks()                        the number of ranks;
//   x.all_gather(mine, all)          collective: all.size() == ranks() * mine.size(), the same mine.size() on
//                                    every rank; afterwards all[r * mine.size(), (r + 1) * mine.size()) holds
//                                    rank r's `mine`, on every rank. May be called several times per step
//                                    (PowerSGD's two rounds), the same number of times on every rank.
// compress::example::single_rank below is the exchange of one process; with it, reduce() leaves the gradient
// one rank's payload decodes to, which is how tests/compress checks the error feedback.
#pragma once

#include <algorithm>
#include <bit>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string_view>
#include <vector>

#include "sinew/core/named_state.hpp"
#include "sinew/nets/tensor_layout.hpp"

namespace sinew {

namespace compress::example {
/// The exchange of a job of one process: all_gather copies `mine`.
struct single_rank {
  int ranks() const { return 1; }
  void all_gather(std::span<const std::uint32_t> mine, std::span<std::uint32_t> all) {
    for (std::size_t i = 0; i < mine.size(); ++i) all[i] = mine[i];
  }
};
}  // namespace compress::example

namespace req {
/// What dist::Compressed hands a compressor's reduce() (the exchange of the contract above).
template <class X>
concept gradient_exchange = requires(X& x, std::span<const std::uint32_t> mine, std::span<std::uint32_t> all) {
  { x.ranks() } -> std::convertible_to<int>;
  { x.all_gather(mine, all) };
};
template <class C>
concept has_compressor_name = requires {
  { C::kName } -> std::convertible_to<std::string_view>;
  { C::kErrorFeedback } -> std::convertible_to<bool>;
};
template <class C>
concept has_compressor_plan = requires(C& c, std::span<const dist::ParamTensor> tensors, std::size_t total) {
  { c.plan(tensors, total) };
  { c.payload_words() } -> std::convertible_to<std::size_t>;
};
template <class C>
concept has_compressor_reduce = requires(C& c, std::span<float> grads, compress::example::single_rank& x) {
  { c.reduce(grads, x) };
  { c.residual() } -> std::convertible_to<std::span<const float>>;
};
/// The checkpoint hook of the contract above.
template <class C>
concept has_compressor_state = requires(C& c) {
  { c.checkpoint_state() } -> std::same_as<NamedState>;
};
}  // namespace req

/// A gradient compressor policy (dist::Compressed's second argument).
template <class C>
concept CompressorPolicy = std::default_initializable<C> && req::has_compressor_name<C> && req::has_compressor_plan<C> &&
                     req::has_compressor_reduce<C>;

namespace compress::example {
/// The smallest compressor: sends every float as it is (32 bits each), no error feedback.
struct identity {
  static constexpr std::string_view kName = "identity";  ///< for reports
  static constexpr bool kErrorFeedback = false;          ///< nothing is left out
  /// Remembers the tensors.
  void plan(std::span<const dist::ParamTensor> t, std::size_t) { tensors = t; }
  /// One word per float of every tensor.
  std::size_t payload_words() const {
    std::size_t n = 0;
    for (const dist::ParamTensor& t : tensors) n += t.size();
    return n;
  }
  /// Sums the ranks' floats in rank order.
  template <req::gradient_exchange X>
  void reduce(std::span<float> grads, X& x) {
    std::vector<std::uint32_t> mine(payload_words()), all(mine.size() * std::size_t(x.ranks()));
    std::size_t w = 0;
    for (const dist::ParamTensor& t : tensors) std::memcpy(&mine[w], &grads[t.offset], 4 * t.size()), w += t.size();
    x.all_gather(mine, all);
    for (const dist::ParamTensor& t : tensors) std::fill_n(&grads[t.offset], t.size(), 0.0f);
    for (std::size_t r = 0; r < std::size_t(x.ranks()); ++r) {
      w = r * mine.size();
      for (const dist::ParamTensor& t : tensors)
        for (std::size_t i = 0; i < t.size(); ++i, ++w) grads[t.offset + i] += std::bit_cast<float>(all[w]);
    }
  }
  /// No error feedback.
  std::span<const float> residual() const { return {}; }

  std::span<const dist::ParamTensor> tensors;  ///< plan()'s tensors
};
static_assert(CompressorPolicy<identity>);
}  // namespace compress::example

}  // namespace sinew
