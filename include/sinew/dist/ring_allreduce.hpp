// sinew/dist/ring_allreduce.hpp: synchronous data parallelism with a bandwidth-optimal ring all-reduce.
//
//   using Strategy = sinew::dist::RingAllReduce<sinew::comm::Mpi>;  // reduce-scatter + all-gather ring
//   using Train    = sinew::Trainer<Net, Backend, Strategy, sinew::Sync>;
//
// The ring (Patarasuk & Yuan; Baidu's and Horovod's all-reduce): the n floats are cut into p segments, one per
// rank. In p - 1 reduce-scatter steps every rank sends one segment to its right neighbour and adds the segment
// arriving from its left one, so that rank r ends holding the full sum of segment r + 1; in p - 1 all-gather
// steps the summed segments travel once more around the ring. Each rank sends and receives 2 (p - 1) n / p
// floats whatever p is, which no all-reduce can beat. Every summed float is computed on one rank and copied to
// the others, so all ranks end with bit-identical results.
//
// Segments travel in chunks of `chunk_floats`, all with non-blocking sends and receives: a chunk is added
// (with xsimd) and sent on to the right as soon as it arrived, while the next chunks are still on the wire.
// The chunk size follows the transport (kRingChunkAuto): 128 KiB within one host, where shared memory copies a
// large message once; 32 KiB across hosts, where Open MPI's TCP transport sends a message of up to 64 KiB
// (btl_tcp_eager_limit) at once but a larger one only after a round trip to the receiver (rendezvous). Across
// 2 and 3 emulated hosts at 1 Gbit/s, 32 KiB chunks take a 4 MiB all-reduce from 84-90% of its alpha-beta
// bound to 95% (docs/several-hosts.md).
//
// The strategy sums the gradient in buckets of options.bucket_bytes, cut on layer boundaries in reverse layer
// order (dist/buckets.hpp), one ring after the other. With options.overlap, the trainer's hooks queue a bucket
// as soon as backward has written its gradients, and after every later layer advance the ring as far as the
// arrived messages allow (RingOperation), on the training thread: no thread, no MPI_THREAD_MULTIPLE. update()
// then drives what is left to the end.
//
// BatchNorm's running statistics are averaged over the ranks at every epoch's end by the same ring
// (synchronize_buffers, the buffer hook of strategy_spec.hpp), so every rank holds the same floats.
//
// Determinism: each float of the sum is added in the ring's order, whatever order messages arrive in, so with
// the same seeds, ranks and threads a Sync run repeats bit for bit, and a run resumed from a checkpoint ends
// where the run that was not stopped ends (tests/dist/test_checkpoint.cpp).
#pragma once

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <deque>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sinew/backend/simd/elementwise.hpp"
#include "sinew/comm/agreement.hpp"
#include "sinew/comm/communicator_spec.hpp"
#include "sinew/core/diagnostics.hpp"
#include "sinew/dist/detail/allreduce_common.hpp"
#include "sinew/dist/strategy_spec.hpp"
#include "sinew/dist/sync_mode.hpp"
#include "sinew/metrics/timer.hpp"
#include "sinew/optim/optimizer_spec.hpp"

namespace sinew::dist {

/// 32768 floats (128 KiB) a chunk within one host: large enough that per-message overhead is small, small
/// enough that a segment of a few MB pipelines over tens of chunks.
inline constexpr std::size_t kRingChunkFloats = std::size_t(1) << 15;
/// 8192 floats (32 KiB) a chunk when the ranks span several hosts: under the TCP transport's eager limit
/// (64 KiB in Open MPI), so a chunk never waits for the receiver's go-ahead.
inline constexpr std::size_t kRingChunkNetworkFloats = std::size_t(1) << 13;
/// The chunk size chosen by the communicator's hosts(): kRingChunkFloats on one host (or for a communicator
/// that does not say), kRingChunkNetworkFloats on several. Every rank chooses alike.
inline constexpr std::size_t kRingChunkAuto = ~std::size_t(0);

/// The chunk size a ring over `comm` uses when asked for `requested` floats (kRingChunkAuto: by the hosts).
template <Communicator C>
std::size_t ring_chunk_floats(const C& comm, std::size_t requested) {
  if (requested != kRingChunkAuto) return requested;
  if constexpr (req::has_hosts<C>)
    if (comm.hosts() > 1) return kRingChunkNetworkFloats;
  return kRingChunkFloats;
}

/// The buffers one ring all-reduce needs; keep one to reuse them across calls.
template <Communicator C>
struct RingWorkspace {
  /// the communicator's pending request
  using request = decltype(std::declval<C&>().isend(std::span<const float>{}, 0, 0));
  std::vector<float> scratch;  ///< two segments: the one being added while the next arrives
  /// pending requests, reused
  /// @{
  std::vector<request> sends, recvs;
  /// @}
};

namespace detail {
inline constexpr int kRingTag = 7301;

inline void add_into(std::span<float> sum, const float* addend) {
  float* s = sum.data();
  simd::transform(0, sum.size(), [&](auto v, std::size_t i) {
    using V = decltype(v);
    simd::store(s + i, simd::load<V>(s + i) + simd::load<V>(addend + i));
  });
}
}  // namespace detail

/// One ring all-reduce in progress, advanced by the caller: advance() does every step whose messages have
/// arrived and returns whether the sum is complete, never blocking, so that a strategy can drive the ring from
/// between backward's layers (Open MPI moves messages only inside MPI calls, without a progress thread). Ranks
/// may run several in a row on one tag: each rank posts its receives in the order its left neighbour sends.
template <Communicator C>
class RingOperation {
 public:
  RingOperation() = default;

  /// Starts summing `data` (see ring_allreduce_sum for the preconditions); `data` and `work` must stay alive
  /// and untouched until advance() returned true.
  void start(C& comm, std::span<float> data, RingWorkspace<C>& work, std::size_t chunk_floats = kRingChunkAuto,
             int tag = detail::kRingTag) {
    comm_ = &comm, data_ = data, work_ = &work, tag_ = tag;
    ranks_ = std::size_t(comm.size()), n_ = data.size();
    if (ranks_ == 1 || n_ == 0) {
      stage_ = stage::done;
      return;
    }
    rank_ = std::size_t(comm.rank());
    right_ = int((rank_ + 1) % ranks_), left_ = int((rank_ + ranks_ - 1) % ranks_);
    max_segment_ = (n_ + ranks_ - 1) / ranks_;
    chunk_floats = ring_chunk_floats(comm, chunk_floats);
    chunk_ = chunk_floats == 0 ? max_segment_ : chunk_floats;
    steps_ = ranks_ - 1;
    if (work.scratch.size() < 2 * max_segment_) work.scratch.resize(2 * max_segment_);
    work.sends.clear();
    work.recvs.clear();
    // One tag serves every message: MPI delivers one sender's messages in order, and both neighbours post
    // theirs in the same order (step by step, chunk by chunk), so each receive matches the chunk meant for it.
    post_scratch_receives(0);
    const std::span<float> first = segment(rank_);
    for (std::size_t c = 0; c < chunks(first.size()); ++c) send(piece(first, c));
    stage_ = stage::reduce_scatter;
    k_ = c_ = next_receive_ = drained_ = 0;
    step_begun_ = false;
  }

  /// Whether the all-reduce has finished.
  bool done() const noexcept { return stage_ == stage::done; }

  /// Does what the arrived messages allow; true once every rank's sum is in `data`. With block, waits
  /// instead, and returns true.
  bool advance(bool block = false) {
    const auto ready = [block](auto& request) {
      if (!block) return bool(request.test());
      request.wait();
      return true;
    };
    auto& work = *work_;
    for (;;) switch (stage_) {
        case stage::reduce_scatter: {
          // Step k: send segment rank - k, receive segment rank - k - 1 into scratch half k % 2 and add it to
          // ours; the sum is exactly what step k + 1 sends, so each chunk goes on as soon as it is added.
          if (k_ == steps_) {
            stage_ = stage::drain_reduce_scatter;
            break;
          }
          if (!step_begun_) {
            // Half (k + 1) % 2 was emptied by step k - 1; the next segment lands there while this one is added.
            if (k_ + 1 < steps_) post_scratch_receives(k_ + 1);
            if (k_ + 1 == steps_) reduce_scatter_sends_ = work.sends.size();
            step_begun_ = true;
          }
          const std::span<float> mine = segment(rank_ + ranks_ - k_ - 1);
          if (c_ == chunks(mine.size())) {
            ++k_, c_ = 0, step_begun_ = false;
            break;
          }
          if (!ready(work.recvs[next_receive_])) return false;
          ++next_receive_;
          const std::span<float> sum = piece(mine, c_);
          detail::add_into(sum, work.scratch.data() + (k_ % 2) * max_segment_ + c_ * chunk_);
          // After the last step this is segment rank + 1, complete: the all-gather's first send.
          send(sum);
          ++c_;
          break;
        }
        case stage::drain_reduce_scatter: {
          // All-gather receives overwrite segments that reduce-scatter sent from, so those sends must be done
          // first; waiting for the all-gather's first sends too could deadlock, as every rank would wait for
          // its right neighbour to reach this point.
          for (; drained_ < reduce_scatter_sends_; ++drained_)
            if (!ready(work.sends[drained_])) return false;
          // Step k receives segment rank - k, complete, straight into `data` and forwards it (except at the
          // last step, when the right neighbour already has it).
          work.recvs.clear();
          for (std::size_t k = 0; k < steps_; ++k) {
            const std::span<float> target = segment(rank_ + ranks_ - k);
            for (std::size_t c = 0; c < chunks(target.size()); ++c) receive(piece(target, c));
          }
          stage_ = stage::all_gather;
          k_ = c_ = next_receive_ = 0;
          break;
        }
        case stage::all_gather: {
          if (k_ == steps_) {
            stage_ = stage::drain;
            break;
          }
          const std::span<float> target = segment(rank_ + ranks_ - k_);
          if (c_ == chunks(target.size())) {
            ++k_, c_ = 0;
            break;
          }
          if (!ready(work.recvs[next_receive_])) return false;
          ++next_receive_;
          if (k_ + 1 < steps_) send(piece(target, c_));
          ++c_;
          break;
        }
        case stage::drain: {
          for (; drained_ < work.sends.size(); ++drained_)
            if (!ready(work.sends[drained_])) return false;
          work.sends.clear();
          work.recvs.clear();
          stage_ = stage::done;
          return true;
        }
        case stage::done: return true;
      }
  }

 private:
  enum class stage { reduce_scatter, drain_reduce_scatter, all_gather, drain, done };

  // Segment s (taken modulo the ranks, so rank - k works) is [s n / p, (s + 1) n / p): sizes differ by one at
  // most, and some are empty when n < p. A chunk count of zero then sends nothing, on both sides alike.
  std::span<float> segment(std::size_t s) const {
    s %= ranks_;
    const std::size_t begin = s * n_ / ranks_, end = (s + 1) * n_ / ranks_;
    return data_.subspan(begin, end - begin);
  }
  std::size_t chunks(std::size_t length) const { return (length + chunk_ - 1) / chunk_; }
  std::span<float> piece(std::span<float> whole, std::size_t c) const {
    return whole.subspan(c * chunk_, std::min(chunk_, whole.size() - c * chunk_));
  }
  void send(std::span<const float> p) { work_->sends.push_back(comm_->isend(p, right_, tag_)); }
  void receive(std::span<float> p) { work_->recvs.push_back(comm_->irecv(p, left_, tag_)); }
  void post_scratch_receives(std::size_t k) {
    const std::size_t length = segment(rank_ + ranks_ - k - 1).size();
    const std::span<float> half(work_->scratch.data() + (k % 2) * max_segment_, length);
    for (std::size_t c = 0; c < chunks(length); ++c) receive(piece(half, c));
  }

  C* comm_ = nullptr;
  std::span<float> data_;
  RingWorkspace<C>* work_ = nullptr;
  int tag_ = detail::kRingTag, right_ = 0, left_ = 0;
  std::size_t ranks_ = 1, rank_ = 0, n_ = 0, max_segment_ = 0, chunk_ = 1, steps_ = 0;
  stage stage_ = stage::done;
  std::size_t k_ = 0, c_ = 0, next_receive_ = 0, drained_ = 0, reduce_scatter_sends_ = 0;
  bool step_begun_ = false;
};

/// Collective: every rank's `data` becomes the element-wise sum over all ranks, by the pipelined ring.
/// Pre: data.size() is the same on every rank (any size, 0 and fewer than the ranks included) and so is
/// `chunk_floats` (0: one chunk per segment; kRingChunkAuto: by the hosts, see ring_chunk_floats).
template <Communicator C>
void ring_allreduce_sum(C& comm, std::span<float> data, RingWorkspace<C>& work,
                        std::size_t chunk_floats = kRingChunkAuto) {
  RingOperation<C> ring;
  ring.start(comm, data, work, chunk_floats);
  ring.advance(/*block=*/true);
}

/// The same, with buffers allocated for this call.
template <Communicator C>
void ring_allreduce_sum(C& comm, std::span<float> data, std::size_t chunk_floats = kRingChunkAuto) {
  RingWorkspace<C> work;
  ring_allreduce_sum(comm, data, work, chunk_floats);
}

/// Comm: the communicator whose point-to-point messages carry the ring (comm::Mpi).
template <Communicator Comm>
class RingAllReduce : public detail::allreduce_base<Comm, RingAllReduce<Comm>> {
  using base = detail::allreduce_base<Comm, RingAllReduce<Comm>>;
  friend base;

 public:
  /// for reports and checkpoints
  static constexpr std::string_view kName = "ring_allreduce";

  /// How the ring sums the gradients.
  struct options {
    /// Free text every rank must agree on (batch size, data set ...), checked by start() with the parameter
    /// count, the optimizer and the chunk size.
    std::string configuration;
    std::size_t chunk_floats = kRingChunkAuto;  ///< floats per message (auto: by the hosts); 0: one per segment
    std::size_t bucket_bytes = kDefaultBucketBytes;  ///< gradient bytes per ring; 0: one ring for all
    bool overlap = true;          ///< start each bucket's ring during backward (off: all after backward)
    double timeout_seconds = 25;  ///< waiting longer in a collective aborts the job naming silent ranks; 0: never
  };

  template <class M>
  struct mode {
    static_assert(dependent_false<M>,
                  "RingAllReduce has no asynchronous mode; use dist::ParameterServer<Comm, Servers> with Async");
  };
  template <class M>
    requires std::same_as<M, Sync>
  struct mode<M> {};

  RingAllReduce() : RingAllReduce(options{}) {}
  /// Over the ranks of `comm` (by default all of the job's). Collective.
  explicit RingAllReduce(options o, Comm comm = Comm())
      : base(std::move(comm), {o.bucket_bytes, o.overlap, o.timeout_seconds}, "dist::RingAllReduce"),
        options_(std::move(o)) {}

  /// Collective: checks that every rank runs the same configuration (else comm_error naming the first rank
  /// that differs), then gives every rank rank 0's parameters.
  template <SyncMode M, Optimizer O>
  void start(std::span<float> params, O&) {
    static_assert(sizeof(mode<M>) > 0);
    std::vector<comm::Fact> facts = {{"ring chunk size", ring_chunk_floats(this->comm_, options_.chunk_floats)}};
    const std::vector<comm::Fact> buckets = this->bucket_facts(params.size());
    facts.insert(facts.end(), buckets.begin(), buckets.end());
    detail::agree_and_broadcast<Comm, O>(this->comm_, params, "dist::RingAllReduce", options_.configuration, facts);
  }

  /// Collective: params -= optimizer(mean of every rank's grads). grads holds the mean afterwards.
  template <SyncMode M, Optimizer O>
  void update(std::span<float> params, std::span<float> grads, O& optimizer, metrics::PhaseSeconds& phases) {
    static_assert(sizeof(mode<M>) > 0);
    this->average_and_step(params, grads, optimizer, phases);
  }

 private:
  // One ring at a time: the ranks start the queued buckets in the same order, so one tag serves them all.
  void submit(std::span<float> bucket) {
    queued_.push_back(bucket);
    poll();
  }

  // The ring gives every rank the same floats: each segment is summed on one rank and passed on as it is. Only
  // at an epoch's end, when no bucket is in flight, so the gradients' workspace is free.
  void sum_buffers(std::span<float> buffers) {
    ring_allreduce_sum(this->comm_, buffers, work_, options_.chunk_floats);
  }

  bool poll() {
    for (;;) {
      if (running_) {
        if (!ring_.advance()) return false;
        running_ = false;
        this->bucket_ends();
      }
      if (queued_.empty()) return true;
      this->bucket_begins();
      ring_.start(this->comm_, queued_.front(), work_, options_.chunk_floats);
      running_ = true;
      queued_.pop_front();
    }
  }

  options options_;
  RingWorkspace<Comm> work_;
  RingOperation<Comm> ring_;
  std::deque<std::span<float>> queued_;
  bool running_ = false;  // a bucket's ring started and not yet seen to end
};

static_assert(Strategy<RingAllReduce<comm::example::single_process>>);
static_assert(req::has_buffer_sync<RingAllReduce<comm::example::single_process>>);

}  // namespace sinew::dist
