// sinew/dist/compressed.hpp: an all-reduce strategy whose gradients cross the wire compressed.
//
//   using Strategy = sinew::dist::Compressed<sinew::dist::MpiAllReduce<sinew::comm::Mpi>,  // start-up, buffers
//                                            sinew::compress::OneBit>;                    // 1 bit a value
//   using Train    = sinew::Trainer<Net, Backend, Strategy, sinew::Sync>;
//   Train trainer(options, sgd, Strategy({.configuration = "cifar10 batch=64"}));  // the wrapped one's options
//
// Compressed<S, C> is S (dist::RingAllReduce or dist::MpiAllReduce) with another update(): after backward, the
// compressor C (compress/compressor_spec.hpp) encodes this rank's gradient tensor by tensor (their shapes come
// from the trainer, nets/tensor_layout.hpp), the ranks all-gather the payloads in a ring of point-to-point
// messages, and every rank decodes every payload and sums them in rank order, so every rank holds the same
// floats, bit for bit, and applies the same step. Everything else is S's: the start-up agreement and broadcast
// (with the compressor and the tensor layout added to what the ranks must agree on), the NaN check, the
// BatchNorm statistics (averaged uncompressed at each epoch's end: a few floats once an epoch), the watchdog
// that aborts a job whose rank stopped (options.timeout_seconds), checkpoints.
//
// Why an all-gather of payloads, not an all-reduce: a compressed payload cannot be summed on the wire. CNTK's
// 1-bit SGD (Seide et al. 2014; CNTK's quantised gradient aggregator, as we read it) cuts the gradient into one
// stripe per rank; each rank receives every other rank's quantised copy of its stripe, decodes and sums them,
// quantises the sum again (with a second residual) and sends it to all: 2 (p - 1) / p quantised gradients per
// rank, but quantised twice. sinew sends each rank's payload to every other rank, (p - 1) payloads per rank,
// quantised once, so the error feedback identity holds exactly per rank and the sum is decoded the same way
// everywhere. At 2 ranks both send one payload; beyond, CNTK's stripes send less (2 instead of p - 1 payloads).
// PowerSGD's sums of P and Q travel the same way (payloads of floats).
//
// Bytes on the wire: bytes_sent() counts the payload words this rank sends, 4 (p - 1) per word, against
// S's count of what the ring sends uncompressed (2 (p - 1) n / p floats); bench/dist reports both per step.
// The phases: encoding, the exchange and decoding are communication (phases.comm, all of it exposed: the
// compressor runs after backward, so nothing overlaps; the overlap hooks are no-ops), the optimizer step is the
// update. A checkpoint carries the compressor's state (its residual; PowerSGD's warm-start Qs) beside S's, so a
// resumed run continues bit for bit.
#pragma once

#include <algorithm>
#include <array>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "sinew/comm/agreement.hpp"
#include "sinew/compress/compressor_spec.hpp"
#include "sinew/core/diagnostics.hpp"
#include "sinew/core/error.hpp"
#include "sinew/core/message_tags.hpp"
#include "sinew/dist/detail/allreduce_common.hpp"
#include "sinew/dist/strategy_spec.hpp"
#include "sinew/dist/sync_mode.hpp"
#include "sinew/metrics/timer.hpp"
#include "sinew/nets/tensor_layout.hpp"
#include "sinew/optim/optimizer_spec.hpp"

namespace sinew::dist {

namespace detail {
template <class Comm, class D>
std::true_type derives_allreduce_base(const allreduce_base<Comm, D>*);
std::false_type derives_allreduce_base(const void*);
/// Whether S is one of the all-reduce strategies (RingAllReduce, MpiAllReduce), whose start-up, buffer
/// averaging and watchdog Compressed keeps.
template <class S>
inline constexpr bool is_allreduce_strategy_v = decltype(derives_allreduce_base(std::declval<S*>()))::value;

/// "ring_allreduce+onebit": S's name and C's.
template <std::string_view const& A, std::string_view const& B>
inline constexpr auto joined_name = [] {
  std::array<char, A.size() + 1 + B.size()> chars{};
  std::size_t i = 0;
  for (char c : A) chars[i++] = c;
  chars[i++] = '+';
  for (char c : B) chars[i++] = c;
  return chars;
}();
}  // namespace detail

/// S: the all-reduce strategy wrapped (dist::RingAllReduce<Comm> or dist::MpiAllReduce<Comm>, with its options);
/// C: the compressor (compress::Fp16, Bf16, OneBit, PowerSgd<Rank>).
template <StrategyPolicy S, CompressorPolicy C>
class Compressed : public S {
  static_assert(detail::is_allreduce_strategy_v<S>,
                "dist::Compressed<Strategy, Compressor> wraps an all-reduce strategy (dist::RingAllReduce or "
                "dist::MpiAllReduce): a parameter server's servers sum and apply each worker's gradient themselves, "
                "with no all-gather to carry compressed payloads; use ParameterServer uncompressed");

 public:
  /// the wrapped strategy and the compressor
  /// @{
  using strategy_type = S;
  using compressor_type = C;
  /// @}
  /// for reports and checkpoints: "ring_allreduce+onebit", ...
  static constexpr std::string_view kName{detail::joined_name<S::kName, C::kName>.data(),
                                          detail::joined_name<S::kName, C::kName>.size()};

  template <class M>
  struct mode {
    static_assert(dependent_false<M>,
                  "dist::Compressed is synchronous: every step every rank decodes every rank's compressed gradient, "
                  "and error feedback carries each rank's residual into its next step; compressing for Async or "
                  "BoundedStaleness<K> (a parameter server) is not supported");
  };
  template <class M>
    requires std::same_as<M, Sync>
  struct mode<M> {};

  /// S's constructors: Compressed(S::options{...}, comm).
  using S::S;

  /// The compressor, for its residual() (tests) and payload_words() (reports).
  const C& compressor() const noexcept { return compressor_; }

  /// The tensor-layout hook (nets/tensor_layout.hpp): the shapes the compressor works on.
  void set_tensor_layout(std::span<const ParamTensor> tensors) { tensors_.assign(tensors.begin(), tensors.end()); }

  /// The checkpoint hook (dist/strategy_spec.hpp): S's state, if any, and the compressor's under "compressor.".
  /// @{
  NamedState checkpoint_state(std::span<float> params) {
    NamedState state;
    if constexpr (req::has_checkpoint_state<S>) state = S::checkpoint_state(params);
    if constexpr (req::has_compressor_state<C>)
      for (auto& [name, data] : compressor_.checkpoint_state().tensors)
        state.tensors.emplace_back("compressor." + name, data);
    return state;
  }
  void restore_checkpoint_state(const NamedState& state) {
    if constexpr (req::has_checkpoint_state<S>) S::restore_checkpoint_state(state);
  }
  /// @}

  /// The overlap hooks, emptied: S's would send uncompressed buckets during backward. The layer starts stay
  /// S's (its bucket facts) and are the tensors when the trainer gives no layout.
  /// @{
  void set_layer_starts(std::span<const std::size_t> starts) {
    S::set_layer_starts(starts);
    layer_starts_.assign(starts.begin(), starts.end());
  }
  void backward_begins(std::span<float>) {}
  void gradients_ready(std::size_t) {}
  /// @}

  /// Collective: S's start (agreement on the configuration, rank 0's parameters everywhere), then the
  /// compressor's plan, which every rank must share (the same compressor and tensors: else comm_error).
  template <SyncModePolicy M, OptimizerPolicy O>
  void start(std::span<float> params, O& optimizer) {
    static_assert(sizeof(mode<M>) > 0);
    if (this->elastic())
      throw comm_error("dist::Compressed: options.elastic is not supported with compression: each rank's error "
                       "feedback residual (and PowerSGD's factors) would have to be re-dealt over the survivors; "
                       "train uncompressed to go on after a rank dies");
    S::template start<M>(params, optimizer);
    if (tensors_.empty()) tensors_ = fallback_tensors(params.size());
    std::uint64_t layout = comm::fingerprint("tensors");
    for (std::size_t i = 0; i < tensors_.size(); ++i) {
      const ParamTensor& t = tensors_[i];
      if (t.end() > params.size() || (i > 0 && t.offset < tensors_[i - 1].end()))
        throw error("dist::Compressed: parameter tensor " + std::to_string(i) + " at " + std::to_string(t.offset) +
                    " (" + std::to_string(t.rows) + " x " + std::to_string(t.cols) + ") overlaps the one before or " +
                    "ends past the " + std::to_string(params.size()) + " parameters; give set_tensor_layout the " +
                    "network's dist::tensor_layout<Net>()");
      layout = comm::fingerprint(std::to_string(t.offset) + "," + std::to_string(t.rows) + "x" + std::to_string(t.cols),
                                 layout);
    }
    compressor_.plan(tensors_, params.size());
    const comm::Fact facts[] = {{"gradient compressor", comm::fingerprint(C::kName), true},
                                {"compressed tensor layout", layout, true}};
    this->require_agreement(facts, "dist::Compressed");
  }

  /// Collective: params -= optimizer(mean of every rank's decoded gradient); grads holds that mean. After
  /// agree_during_update(false) on some rank, nothing is applied and agreed() is false.
  template <SyncModePolicy M, OptimizerPolicy O>
  void update(std::span<float> params, std::span<float> grads, O& optimizer, metrics::PhaseSeconds& phases) {
    static_assert(sizeof(mode<M>) > 0);
    metrics::Stopwatch watch;
    const int p = this->comm_.size();
    exchange x{*this};
    compressor_.reduce(grads, x);
    // Floats between tensors (alignment padding) carry no gradient.
    std::size_t at = 0;
    for (const ParamTensor& t : tensors_) std::fill(grads.begin() + at, grads.begin() + t.offset, 0.0f), at = t.end();
    std::fill(grads.begin() + std::min(at, grads.size()), grads.end(), 0.0f);
    // A deferred NaN check (agree_during_update) travelled beside the payloads; its outcome decides the step.
    this->wait_watched([&] { return this->agreement_known(); }, "the all-reduce of the NaN check");
    phases.comm += watch.lap();
    if (!this->agreed()) return;
    if (p > 1) detail::scale(grads, 1.0f / float(p));
    optimizer.step(params, grads);
    phases.update += watch.lap();
  }

 private:
  // The ring all-gather over S's communicator, watched by S's watchdog. The words travel as the communicator's
  // floats: MPI_FLOAT between ranks of one architecture copies bits, and sinew never reads them as floats.
  struct exchange {
    Compressed& self;
    int ranks() const { return self.comm_.size(); }
    void all_gather(std::span<const std::uint32_t> mine, std::span<std::uint32_t> all) {
      auto& comm = self.comm_;
      const std::size_t p = std::size_t(comm.size()), rank = std::size_t(comm.rank()), n = mine.size();
      std::copy(mine.begin(), mine.end(), all.begin() + std::ptrdiff_t(rank * n));
      if (p == 1 || n == 0) return;
      const auto block = [&](std::size_t r) {
        return std::span<float>(reinterpret_cast<float*>(all.data() + (r % p) * n), n);
      };
      const int right = int((rank + 1) % p), left = int((rank + p - 1) % p);
      // Step k passes on the block of rank - k and receives that of rank - k - 1 (Patarasuk and Yuan's ring).
      for (std::size_t k = 0; k + 1 < p; ++k) {
        auto receive = comm.irecv(block(rank + 2 * p - k - 1), left, message_tag::kCompressedRing);
        auto send = comm.isend(std::span<const float>(block(rank + p - k)), right, message_tag::kCompressedRing);
        self.wait_watched([&] { return bool(receive.test()) && bool(send.test()); },
                          "the all-gather of compressed gradients");
      }
      self.wire_bytes_ += 4 * (p - 1) * n;
    }
  };

  // Without a layout: each layer's slice is one vector (one column), the best guess without shapes.
  std::vector<ParamTensor> fallback_tensors(std::size_t total) const {
    std::vector<ParamTensor> out;
    if (layer_starts_.empty() || layer_starts_.back() >= total) return {{0, total, 1}};
    for (std::size_t i = 0; i < layer_starts_.size(); ++i) {
      const std::size_t end = i + 1 < layer_starts_.size() ? layer_starts_[i + 1] : total;
      out.push_back({layer_starts_[i], end - layer_starts_[i], 1});
    }
    return out;
  }

  C compressor_;
  std::vector<ParamTensor> tensors_;
  std::vector<std::size_t> layer_starts_;
};

}  // namespace sinew::dist
