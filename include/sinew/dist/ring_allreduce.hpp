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
#pragma once

#include <algorithm>
#include <concepts>
#include <cstddef>
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

/// 32768 floats (128 KiB) a chunk: large enough that per-message overhead is small, small enough that a
/// segment of a few MB pipelines over tens of chunks.
inline constexpr std::size_t kRingChunkFloats = std::size_t(1) << 15;

/// The buffers one ring all-reduce needs; keep one to reuse them across calls.
template <Communicator C>
struct RingWorkspace {
  using request = decltype(std::declval<C&>().isend(std::span<const float>{}, 0, 0));
  std::vector<float> scratch;  // two segments: the one being added while the next arrives
  std::vector<request> sends, recvs;
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

/// Collective: every rank's `data` becomes the element-wise sum over all ranks, by the pipelined ring.
/// Pre: data.size() is the same on every rank (any size, 0 and fewer than the ranks included) and so is
/// `chunk_floats` (0: one chunk per segment).
template <Communicator C>
void ring_allreduce_sum(C& comm, std::span<float> data, RingWorkspace<C>& work,
                        std::size_t chunk_floats = kRingChunkFloats) {
  const std::size_t ranks = std::size_t(comm.size()), n = data.size();
  if (ranks == 1 || n == 0) return;
  const std::size_t rank = std::size_t(comm.rank());
  const int right = int((rank + 1) % ranks), left = int((rank + ranks - 1) % ranks);
  const std::size_t max_segment = (n + ranks - 1) / ranks;
  const std::size_t chunk = chunk_floats == 0 ? max_segment : chunk_floats;

  // Segment s (taken modulo the ranks, so rank - k works) is [s n / p, (s + 1) n / p): sizes differ by one at
  // most, and some are empty when n < p. A chunk count of zero then sends nothing, on both sides alike.
  const auto segment = [&](std::size_t s) {
    s %= ranks;
    const std::size_t begin = s * n / ranks, end = (s + 1) * n / ranks;
    return data.subspan(begin, end - begin);
  };
  const auto chunks = [&](std::size_t length) { return (length + chunk - 1) / chunk; };
  const auto piece = [&](auto whole, std::size_t c) {
    return whole.subspan(c * chunk, std::min(chunk, whole.size() - c * chunk));
  };
  const auto send = [&](std::span<const float> p) { work.sends.push_back(comm.isend(p, right, detail::kRingTag)); };
  const auto receive = [&](std::span<float> p) { work.recvs.push_back(comm.irecv(p, left, detail::kRingTag)); };
  const auto wait_all = [](auto& requests, std::size_t count) {
    for (std::size_t i = 0; i < count; ++i) requests[i].wait();
  };

  if (work.scratch.size() < 2 * max_segment) work.scratch.resize(2 * max_segment);
  work.sends.clear();
  work.recvs.clear();
  // One tag serves every message: MPI delivers one sender's messages in order, and both neighbours post theirs
  // in the same order (step by step, chunk by chunk), so each receive matches the chunk meant for it.

  // Reduce-scatter. Step k: send segment rank - k, receive segment rank - k - 1 into scratch half k % 2 and
  // add it to ours; the sum is exactly what step k + 1 sends, so each chunk goes on as soon as it is added.
  const std::size_t steps = ranks - 1;
  const auto post_scratch_receives = [&](std::size_t k) {
    const std::size_t length = segment(rank + ranks - k - 1).size();
    const std::span<float> half(work.scratch.data() + (k % 2) * max_segment, length);
    for (std::size_t c = 0; c < chunks(length); ++c) receive(piece(half, c));
  };
  post_scratch_receives(0);
  const std::span<float> first = segment(rank);
  for (std::size_t c = 0; c < chunks(first.size()); ++c) send(piece(first, c));
  std::size_t next_receive = 0, reduce_scatter_sends = 0;
  for (std::size_t k = 0; k < steps; ++k) {
    // Half (k + 1) % 2 was emptied by step k - 1; the next segment lands there while this one is added.
    if (k + 1 < steps) post_scratch_receives(k + 1);
    if (k + 1 == steps) reduce_scatter_sends = work.sends.size();
    const std::span<float> mine = segment(rank + ranks - k - 1);
    const float* arrived = work.scratch.data() + (k % 2) * max_segment;
    for (std::size_t c = 0; c < chunks(mine.size()); ++c) {
      work.recvs[next_receive++].wait();
      const std::span<float> sum = piece(mine, c);
      detail::add_into(sum, arrived + c * chunk);
      // After the last step this is segment rank + 1, complete: the all-gather's first send.
      send(sum);
    }
  }

  // All-gather. Step k receives segment rank - k, complete, straight into `data` and forwards it (except at
  // the last step, when the right neighbour already has it). The receives overwrite segments that
  // reduce-scatter sent from, so those sends must be done first; waiting for the all-gather's first sends too
  // could deadlock, as every rank would wait for its right neighbour to reach this point.
  wait_all(work.sends, reduce_scatter_sends);
  work.recvs.clear();
  for (std::size_t k = 0; k < steps; ++k) {
    const std::span<float> target = segment(rank + ranks - k);
    for (std::size_t c = 0; c < chunks(target.size()); ++c) receive(piece(target, c));
  }
  next_receive = 0;
  for (std::size_t k = 0; k < steps; ++k) {
    const std::span<float> target = segment(rank + ranks - k);
    for (std::size_t c = 0; c < chunks(target.size()); ++c) {
      work.recvs[next_receive++].wait();
      if (k + 1 < steps) send(piece(target, c));
    }
  }
  wait_all(work.sends, work.sends.size());
  work.sends.clear();
  work.recvs.clear();
}

/// The same, with buffers allocated for this call.
template <Communicator C>
void ring_allreduce_sum(C& comm, std::span<float> data, std::size_t chunk_floats = kRingChunkFloats) {
  RingWorkspace<C> work;
  ring_allreduce_sum(comm, data, work, chunk_floats);
}

/// Comm: the communicator whose point-to-point messages carry the ring (comm::Mpi).
template <Communicator Comm>
class RingAllReduce : public detail::allreduce_base<Comm> {
 public:
  static constexpr std::string_view kName = "ring_allreduce";

  struct options {
    /// Free text every rank must agree on (batch size, data set ...), checked by start() with the parameter
    /// count, the optimizer and the chunk size.
    std::string configuration;
    std::size_t chunk_floats = kRingChunkFloats;  ///< floats per message; 0: one message per segment
  };

  template <class M>
  struct mode {
    static_assert(dependent_false<M>,
                  "RingAllReduce has no asynchronous mode; use dist::ParameterServer<Comm, Servers> with Async");
  };
  template <class M>
    requires std::same_as<M, Sync>
  struct mode<M> {};

  RingAllReduce() = default;
  explicit RingAllReduce(options o, Comm comm = Comm())
      : detail::allreduce_base<Comm>(std::move(comm)), options_(std::move(o)) {}

  /// Collective: checks that every rank runs the same configuration (else comm_error naming the first rank
  /// that differs), then gives every rank rank 0's parameters.
  template <SyncMode M, Optimizer O>
  void start(std::span<float> params, O&) {
    static_assert(sizeof(mode<M>) > 0);
    const comm::Fact chunk[] = {{"ring chunk size", options_.chunk_floats}};
    detail::agree_and_broadcast<Comm, O>(this->comm_, params, "dist::RingAllReduce", options_.configuration, chunk);
  }

  /// Collective: params -= optimizer(mean of every rank's grads). grads holds the mean afterwards.
  template <SyncMode M, Optimizer O>
  void update(std::span<float> params, std::span<float> grads, O& optimizer, metrics::PhaseSeconds& phases) {
    static_assert(sizeof(mode<M>) > 0);
    this->average_and_step(params, grads, optimizer, phases, [this](std::span<float> g) {
      ring_allreduce_sum(this->comm_, g, work_, options_.chunk_floats);
    });
  }

 private:
  options options_;
  RingWorkspace<Comm> work_;
};

static_assert(Strategy<RingAllReduce<comm::example::single_process>>);

}  // namespace sinew::dist
