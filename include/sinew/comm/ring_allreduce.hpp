// sinew/comm/ring_allreduce.hpp: the bandwidth-optimal ring all-reduce over any Communicator, with two
// transports (messages, or an MPI-3 shared window within one host). dist/ring_allreduce.hpp is the strategy
// that sums gradients with it; the names stay in sinew::dist, where they were first used.
//
//   sinew::dist::RingWorkspace<C> work;                      // keep it to reuse the buffers across calls
//   sinew::dist::ring_allreduce_sum(comm, data, work);       // every rank's data becomes the sum over the ranks
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
// (btl_tcp_eager_limit) at once but a larger one only after a round trip to the receiver (rendezvous), so
// chunks under that limit keep the link busy (measured: docs/several-hosts.md).
//
// Within one host (RingTransport::automatic, when the communicator offers shared_window() and hosts() is 1) the
// segments move through an MPI-3 shared window instead of messages: each rank copies into its part of the
// window the segments its peers sum, raises a flag, sums its own segment (data + the peers' windows, in rank
// order, with xsimd) into its data and its window, raises a second flag, and copies each peer's summed segment
// out of that peer's window as soon as its flag is up; a third flag says it has read the peers' windows, which
// they may then overwrite. No message, no system call and no rendezvous handshake: Open MPI's shared-memory
// transport copies a large message with process_vm_readv after a round trip per message (CMA), and
// MPI_Allreduce pays that too. Every float of the sum is still computed on one rank and copied to the others,
// so ranks end bit-identical. A sum longer than the window (16 MiB a rank at most) goes through it in rounds.
//
// Data that already lies in shared memory needs no window: RingOperation::share() allocates (collectively) a
// second window for `floats` a rank and returns this rank's part, in which the caller keeps what it sums (the
// strategy puts the model's gradients there). A sum of floats inside it skips the copy in and the gather: each
// rank sums its segment straight from the peers' parts and stores the sum into every rank's part at once, 8
// bytes of memory traffic a float with two ranks, where copying the peers' sums out of their parts moved 10 and
// the copying path moves 16 (bench/results/2026-11-30-zen3-issue34-ring-exposed: on cores that also compute, that
// traffic is the exposed time). A peer reads and writes this rank's floats until it raises its kReduced flag, so
// such a sum ends only when every peer on the host has: the caller may then write its floats again. Across hosts
// (hierarchical) the segment's sum is known only after the ring across them, and the peers still copy it out.
// A rank that dies or hangs leaves its flags down: the strategy's watchdog names it
// (dist/detail/allreduce_common.hpp).
//
// Across several hosts with several ranks on each (RingTransport::hierarchical, which the caller asks for; Horovod's
// hierarchical all-reduce, Open MPI 5's coll/han): the communicator's host_split() gives each rank its host's
// ranks and its peers at the same place on the other hosts. Each round goes through the host's window as above,
// except that between the sum of a rank's segment and the peers' copying it out, the segment is summed across
// hosts by a ring of messages among the peers (one ring per place, all at once). The network then carries
// 2 (h - 1) / h of the data per host for h hosts, where the flat ring over all p ranks carries 2 (p - 1) / p of
// it over every host's link, in 2 (h - 1) steps instead of 2 (p - 1). Each float is still summed in a fixed order
// (the host's ranks in order, then the hosts in the ring's order) on one rank and copied to the others, so ranks
// end bit-identical; the order differs from the flat ring's, so the sums differ from it within rounding.
// One rank per host, it is the ring across hosts; one host, the window alone.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <span>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "sinew/comm/communicator_spec.hpp"
#include "sinew/core/affinity.hpp"
#include "sinew/core/elementwise.hpp"
#include "sinew/core/error.hpp"
#include "sinew/core/message_tags.hpp"

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
template <CommunicatorPolicy C>
std::size_t ring_chunk_floats(const C& comm, std::size_t requested) {
  if (requested != kRingChunkAuto) return requested;
  if constexpr (req::has_hosts<C>)
    if (comm.hosts() > 1) return kRingChunkNetworkFloats;
  return kRingChunkFloats;
}

/// How the ring moves the segments between ranks.
enum class RingTransport {
  automatic,      ///< shared_memory when the communicator has a shared window and every rank is on one host
  messages,       ///< the communicator's isend and irecv (across hosts; within one, MPI copies each message)
  shared_memory,  ///< each rank sums its segment straight from the others' shared windows (one host only)
  /// The shared window within each host, messages across: each rank sums its segment of the host's data through
  /// the window, sums that segment with the ranks at its place on the other hosts by a ring of messages, and
  /// the host gathers the segments through the window (needs host_split and shared_window; see the file comment).
  hierarchical,
};

/// 4 Mi floats (16 MiB) of shared window per rank at most: a longer sum goes through it in rounds.
inline constexpr std::size_t kRingSharedFloats = std::size_t(1) << 22;

namespace detail {
template <CommunicatorPolicy C>
struct ring_hierarchy;

/// the tag of the ring's messages (tests start rings on it by this name)
inline constexpr int kRingTag = message_tag::kRing;

/// The shared window a communicator gives (comm/communicator_spec.hpp), or an empty tag without one.
template <class C>
struct ring_window {
  struct none {};
  using type = none;
};
template <req::has_shared_window C>
struct ring_window<C> {
  using type = decltype(std::declval<C&>().shared_window(std::size_t{}));
};
}  // namespace detail

/// The buffers one ring all-reduce needs; keep one to reuse them across calls. Every rank must use its
/// workspaces in the same order: the shared window is allocated (collectively) on first use and reused.
template <CommunicatorPolicy C>
struct RingWorkspace {
  /// the communicator's pending request
  using request = decltype(std::declval<C&>().isend(std::span<const float>{}, 0, 0));
  std::vector<float> scratch;  ///< two segments: the one being added while the next arrives
  /// pending requests, reused
  /// @{
  std::vector<request> sends, recvs;
  /// @}
  /// The shared-memory transport's window (each rank's flags, then up to window_floats floats) and its state.
  /// @{
  typename detail::ring_window<C>::type window{};
  std::size_t window_floats = 0;        ///< floats each rank's part of `window` holds
  std::size_t window_floats_max = kRingSharedFloats;  ///< the most it grows to (longer sums take rounds)
  std::uint64_t rounds_done = 0;        ///< rounds summed through `window` since it was allocated
  std::vector<const float*> sources;    ///< one per rank, reused
  std::vector<float*> targets;          ///< where a rank's summed segment goes: its data (and window or peers)
  std::vector<char> gathered;           ///< one per rank, reused
  /// @}
  /// The hierarchical transport's communicators and ring across hosts, made (collectively) on first use.
  /// @{
  int host_ranks = 0;  ///< ranks per host: 0 as the launcher placed them, k > 0 every k consecutive ranks
  std::unique_ptr<detail::ring_hierarchy<C>> hierarchy;
  /// @}
  /// Memory the caller sums in place (RingOperation::share): the peers read each rank's part of it directly.
  /// Declared last, so freed first: under the hierarchical transport it was made over the host's communicator.
  /// @{
  typename detail::ring_window<C>::type shared_data{};
  std::size_t shared_floats = 0;  ///< floats in each rank's part of `shared_data` (0: none)
  /// @}
};

namespace detail {

// targets[t][i] = sources[0][i] + sources[1][i] + ..., added in that order, for every target (a target may be
// a source: each vector of the sum is loaded before any target's is stored).
inline void sum_into(std::span<float* const> targets, std::span<const float* const> sources, std::size_t n) {
  simd::transform(0, n, [&](auto v, std::size_t i) {
    using V = decltype(v);
    V sum = simd::load<V>(sources[0] + i);
    for (std::size_t q = 1; q < sources.size(); ++q) sum = sum + simd::load<V>(sources[q] + i);
    for (float* target : targets) simd::store(target + i, sum);
  });
}

// The shared-memory transport's flags, one cache line each at the start of every rank's part of the window:
// the round whose copy-in (ready), sum (reduced: in place, stored into every rank's data) and gather (done) that
// rank has finished. Rounds count from 1.
inline constexpr std::size_t kFlagBytes = 64;
enum ring_flag : std::size_t { kReady = 0, kReduced = 1, kDone = 2 };
inline constexpr std::size_t kWindowHeader = 4 * kFlagBytes;
}  // namespace detail

/// One ring all-reduce in progress, advanced by the caller: advance() does every step whose messages have
/// arrived and returns whether the sum is complete, never blocking, so that a strategy can drive the ring from
/// between backward's layers (Open MPI moves messages only inside MPI calls, without a progress thread). Ranks
/// may run several in a row on one tag: each rank posts its receives in the order its left neighbour sends.
template <CommunicatorPolicy C>
class RingOperation {
 public:
  RingOperation() = default;

  /// Starts summing `data` (see ring_allreduce_sum for the preconditions); `data` and `work` must stay alive
  /// and untouched until advance() returned true.
  void start(C& comm, std::span<float> data, RingWorkspace<C>& work, std::size_t chunk_floats = kRingChunkAuto,
             int tag = detail::kRingTag, RingTransport transport = RingTransport::automatic) {
    comm_ = &comm, data_ = data, work_ = &work, tag_ = tag;
    across_ = nullptr;
    in_place_ = false;
    ranks_ = std::size_t(comm.size()), n_ = data.size();
    if (ranks_ == 1 || n_ == 0) {
      stage_ = stage::done;
      return;
    }
    rank_ = std::size_t(comm.rank());
    if (transport == RingTransport::hierarchical) {
      start_hierarchical(comm, chunk_floats);
      return;
    }
    if (shared_memory(comm, transport)) {
      start_shared();
      return;
    }
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

  /// Collective when the transport is the shared window (no-op otherwise): allocates `work`'s window for sums of
  /// up to `floats` now, so that start() need not (it grows the window collectively on a longer sum, a wait for
  /// every rank that the overlap hooks would rather not make).
  static void reserve(C& comm, RingWorkspace<C>& work, std::size_t floats,
                      RingTransport transport = RingTransport::automatic) {
    if (comm.size() == 1 || floats == 0) return;
    C* over = &comm;
    if (transport == RingTransport::hierarchical) {
      over = &hierarchy(comm, work).split.local;  // the host's window; the ring across needs none
      if (over->size() == 1) return;
    } else if (!shared_memory(comm, transport)) {
      return;
    }
    RingOperation ring;
    ring.comm_ = over, ring.work_ = &work, ring.ranks_ = std::size_t(over->size()), ring.n_ = floats;
    ring.rank_ = std::size_t(over->rank());
    ring.grow_window();
  }

  /// Collective when the transport is the shared window: allocates memory the ranks read from each other and
  /// returns this rank's part, `floats` zeroed floats, 64-byte aligned, alive while `work` is (and not moved).
  /// A sum of floats inside it through `work` skips the copy into the window (see the file comment). Empty
  /// where the transport sends messages, or with one rank: the caller then keeps its floats in its own memory.
  /// Every rank calls it alike, with the same `floats`, and keeps the same offsets in it.
  static std::span<float> share([[maybe_unused]] C& comm, [[maybe_unused]] RingWorkspace<C>& work,
                                [[maybe_unused]] std::size_t floats,
                                [[maybe_unused]] RingTransport transport = RingTransport::automatic) {
    if constexpr (req::has_shared_window<C>) {
      if (comm.size() == 1 || floats == 0) return {};
      C* over = &comm;
      if (transport == RingTransport::hierarchical) {
        over = &hierarchy(comm, work).split.local;
        if (over->size() == 1) return {};
      } else if (!shared_memory(comm, transport)) {
        return {};
      }
      work.shared_data = {};
      work.shared_floats = 0;
      work.shared_data = over->shared_window(floats * sizeof(float));
      work.shared_floats = floats;
      return {reinterpret_cast<float*>(work.shared_data.base(over->rank())), floats};
    } else {
      return {};
    }
  }

  /// Whether the all-reduce has finished.
  bool done() const noexcept { return stage_ == stage::done; }
  /// Whether this sum reads the peers' floats where they lie (its data is in share()'s memory).
  bool in_place() const noexcept { return in_place_; }

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
          simd::add(sum.data(), work.scratch.data() + (k_ % 2) * max_segment_ + c_ * chunk_, sum.data(), sum.size());
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
        case stage::shared_copy_in: {
          // The peers have read this rank's window for the last round; give them this rank's part of the
          // segments they sum. Data in shared memory is read where it lies: ready as it is.
          if (!in_place_) {
            if (!peers_reached(detail::kDone, round_ - 1, block)) return false;
            for (std::size_t q = 0; q < ranks_; ++q)
              if (q != rank_) copy(window_part(rank_, q), round_segment(q));
          }
          raise(detail::kReady);
          stage_ = stage::shared_reduce;
          break;
        }
        case stage::shared_reduce: {
          // This rank's segment, summed in rank order from its own data and the peers' parts. Copying, it goes
          // into this rank's data and window, whence the peers copy it. In place within one host it goes into
          // every rank's data at once: the peers raised kReady, so that segment of theirs is final and read by
          // this rank alone until it raises kReduced; no gather pass follows. Every rank ends with these very floats.
          if (!peers_reached(detail::kReady, round_, block)) return false;
          const std::span<float> mine = round_segment(rank_);
          const bool scatter = in_place_ && !across_;
          work.sources.resize(ranks_);
          work.targets.assign(1, mine.data());
          for (std::size_t q = 0; q < ranks_; ++q) {
            work.sources[q] = q == rank_ ? mine.data() : peer_part(q, rank_).data();
            if (scatter && q != rank_) work.targets.push_back(peer_part(q, rank_).data());
          }
          if (!in_place_) work.targets.push_back(window_part(rank_, rank_).data());
          detail::sum_into(work.targets, work.sources, mine.size());
          if (scatter) {
            raise(detail::kReduced);
            stage_ = stage::shared_scattered;
            break;
          }
          if (across_) {
            across_->ring.start(across_->split.across, mine, across_->work, across_chunk_floats_, tag_,
                                RingTransport::messages);
            stage_ = stage::shared_across;
            break;
          }
          segment_reduced();
          break;
        }
        case stage::shared_scattered: {
          // Each peer has written its summed segment into this rank's data, and read this rank's floats for the
          // last time, once its kReduced is up: the caller may then write them again.
          if (!peers_reached(detail::kReduced, round_, block)) return false;
          raise(detail::kDone);
          work.rounds_done = round_;
          stage_ = stage::done;
          return true;
        }
        case stage::shared_across: {
          // The host's sum of this segment, summed with the other hosts' by the ring of the ranks at this place
          // (every host's segment s covers the same floats); each float of it is then the same on every host.
          if (!across_->ring.advance(block)) return false;
          if (!in_place_) copy(window_part(rank_, rank_), round_segment(rank_));
          segment_reduced();
          break;
        }
        case stage::shared_gather: {
          // Each peer's summed segment as soon as it is there.
          for (std::size_t q = 0; q < ranks_; ++q) {
            if (work.gathered[q] || !reached(q, detail::kReduced, round_, block)) continue;
            copy(round_segment(q), peer_part(q, q));
            work.gathered[q] = 1, ++gathered_;
          }
          if (gathered_ < ranks_) return false;
          raise(detail::kDone);
          work.rounds_done = round_;
          offset_ += length_;
          if (in_place_) {
            stage_ = stage::shared_release;
            break;
          }
          if (offset_ == n_) {
            stage_ = stage::done;
            return true;
          }
          begin_round();
          break;
        }
        case stage::shared_release: {
          // The peers read this rank's floats until their gather: the caller may write them once all are done.
          if (!peers_reached(detail::kDone, round_, block)) return false;
          stage_ = stage::done;
          return true;
        }
        case stage::done: return true;
      }
  }

 private:
  enum class stage { reduce_scatter, drain_reduce_scatter, all_gather, drain, shared_copy_in, shared_reduce,
                     shared_scattered, shared_across, shared_gather, shared_release, done };

  // This rank's segment of the round is summed and in its window: the peers may copy it.
  void segment_reduced() {
    raise(detail::kReduced);
    work_->gathered.assign(ranks_, 0);
    work_->gathered[rank_] = 1;
    gathered_ = 1;
    stage_ = stage::shared_gather;
  }

  // The hierarchical transport: the shared-window stages over this rank's host, with the segment summed across
  // hosts between the sum and the gather. One rank per host: a ring across them; one host: its window alone.
  void start_hierarchical(C& comm, std::size_t chunk_floats) {
    detail::ring_hierarchy<C>& h = hierarchy(comm, *work_);
    if (h.split.local.size() == 1) {
      start(h.split.across, data_, *work_, chunk_floats, tag_, RingTransport::messages);
      return;
    }
    across_ = h.split.across.size() > 1 ? &h : nullptr;
    across_chunk_floats_ = chunk_floats;
    comm_ = &h.split.local;
    ranks_ = std::size_t(comm_->size()), rank_ = std::size_t(comm_->rank());
    start_shared();
  }
  // The workspace's split of `comm` by host, made on first use (collective).
  static detail::ring_hierarchy<C>& hierarchy([[maybe_unused]] C& comm, RingWorkspace<C>& work) {
    if constexpr (req::has_host_split<C> && req::has_shared_window<C>) {
      if (!work.hierarchy)
        work.hierarchy = std::make_unique<detail::ring_hierarchy<C>>(comm.host_split(work.host_ranks));
      return *work.hierarchy;
    } else {
      throw comm_error("dist::ring_allreduce_sum: RingTransport::hierarchical needs a communicator with host_split() "
                       "and shared_window() (comm/communicator_spec.hpp), as comm::Mpi has; use automatic or messages");
    }
  }

  // Whether this ring goes through the shared window: asked for, or automatic with every rank on one host.
  static bool shared_memory([[maybe_unused]] C& comm, RingTransport transport) {
    if constexpr (req::has_shared_window<C>) {
      if (transport == RingTransport::messages || transport == RingTransport::hierarchical) return false;
      if (transport == RingTransport::shared_memory) return true;  // shared_window() says why it cannot
      if constexpr (req::has_hosts<C>) return comm.hosts() == 1;
      return false;
    } else {
      if (transport == RingTransport::shared_memory)
        throw comm_error("dist::ring_allreduce_sum: RingTransport::shared_memory needs a communicator with "
                         "shared_window() (comm/communicator_spec.hpp), as comm::Mpi has; use automatic or messages");
      return false;
    }
  }

  // The data is summed in rounds of at most window_floats: in each, every rank copies in, sums its segment and
  // gathers the others' (see the stages in advance()). The window grows, collectively, to the longest sum.
  void start_shared() {
    in_place_ = shared_offset(in_place_offset_);
    // In place the window carries the flags only; it is there from reserve() or an earlier sum, else made now.
    if (!in_place_ || work_->window_floats == 0) grow_window();
    offset_ = 0;
    round_ = work_->rounds_done;
    begin_round();
  }
  void grow_window() {
    yield_ = oversubscribed(*comm_);
    if constexpr (req::has_shared_window<C>) {
      auto& work = *work_;
      const std::size_t want = std::min(n_, std::max<std::size_t>(work.window_floats_max, ranks_));
      if (work.window_floats >= want) return;
      // Freed before the larger one is allocated, once no peer reads it any more.
      if (work.window_floats > 0) peers_reached(detail::kDone, work.rounds_done, /*block=*/true);
      work.window = {};
      work.window = comm_->shared_window(detail::kWindowHeader + want * sizeof(float));
      work.window_floats = want, work.rounds_done = 0;
    }
  }
  void begin_round() {
    ++round_;
    length_ = in_place_ ? n_ : std::min(work_->window_floats, n_ - offset_);
    stage_ = stage::shared_copy_in;
  }
  // Segment s of this round, in `data` and in rank q's part of the window.
  std::span<float> round_segment(std::size_t s) const {
    const std::size_t begin = s * length_ / ranks_, end = (s + 1) * length_ / ranks_;
    return data_.subspan(offset_ + begin, end - begin);
  }
  std::span<float> window_part(std::size_t q, std::size_t s) const {
    if constexpr (req::has_shared_window<C>) {
      float* floats = reinterpret_cast<float*>(work_->window.base(int(q)) + detail::kWindowHeader);
      const std::size_t begin = s * length_ / ranks_, end = (s + 1) * length_ / ranks_;
      return {floats + begin, end - begin};
    } else {
      return {};
    }
  }
  // Whether data_ lies in this rank's part of the workspace's shared data (share()); if so, at which float.
  bool shared_offset(std::size_t& offset) const {
    if constexpr (req::has_shared_window<C>) {
      if (work_->shared_floats == 0) return false;
      const float* base = reinterpret_cast<const float*>(work_->shared_data.base(int(rank_)));
      // Compared as integers: pointers into different objects have no order in C++.
      const auto at = reinterpret_cast<std::uintptr_t>(data_.data()), first = reinterpret_cast<std::uintptr_t>(base);
      if (at < first || at + n_ * sizeof(float) > first + work_->shared_floats * sizeof(float)) return false;
      offset = std::size_t(data_.data() - base);
      return true;
    } else {
      return (void)offset, false;
    }
  }
  // Segment s of this round where rank q's peers read it: in q's shared data when in place, else in q's window.
  std::span<float> peer_part(std::size_t q, std::size_t s) const {
    if constexpr (req::has_shared_window<C>) {
      if (in_place_) {
        float* floats = reinterpret_cast<float*>(work_->shared_data.base(int(q))) + in_place_offset_ + offset_;
        const std::size_t begin = s * length_ / ranks_, end = (s + 1) * length_ / ranks_;
        return {floats + begin, end - begin};
      }
    }
    return window_part(q, s);
  }
  std::uint64_t& flag(std::size_t q, detail::ring_flag which) const {
    if constexpr (req::has_shared_window<C>)
      return *reinterpret_cast<std::uint64_t*>(work_->window.base(int(q)) + which * detail::kFlagBytes);
    static std::uint64_t none = 0;  // unreachable: without a window no ring takes the shared stages
    return (void)q, (void)which, none;
  }
  // Publishes that this rank finished `which` of this round: the floats it wrote before are seen by whoever
  // sees the flag (release, acquire).
  void raise(detail::ring_flag which) const {
    std::atomic_ref<std::uint64_t>(flag(rank_, which)).store(round_, std::memory_order_release);
  }
  // Whether more ranks share this one's CPU set than it has cores (mpirun --oversubscribe): then a rank that
  // waits yields the core, which the rank it waits for may need, as Open MPI's progress loop does then. Bound
  // ranks (one core each) or ranks that split their set (core/affinity.hpp) spin without a system call.
  // Open MPI's own switch in the environment (OMPI_MCA_mpi_yield_when_idle=1) makes them yield too: scripts/cluster
  // sets it where emulated hosts share the machine's cores, which no host's CPU set shows.
  static bool oversubscribed([[maybe_unused]] const C& comm) {
    if (const char* yield = std::getenv("OMPI_MCA_mpi_yield_when_idle"); yield && std::string_view(yield) == "1")
      return true;
    if constexpr (req::has_host_share<C>)
      return std::size_t(comm.host_share().count) > launch_cpus().size();
    else
      return true;
  }

  // Whether rank q has finished `which` of `round`; with block, waits for it.
  bool reached(std::size_t q, detail::ring_flag which, std::uint64_t round, bool block) const {
    std::atomic_ref<std::uint64_t> f(flag(q, which));
    while (f.load(std::memory_order_acquire) < round) {
      if (yield_) std::this_thread::yield();
      if (!block) return false;
    }
    return true;
  }
  bool peers_reached(detail::ring_flag which, std::uint64_t round, bool block) const {
    for (std::size_t q = 0; q < ranks_; ++q)
      if (q != rank_ && !reached(q, which, round, block)) return false;
    return true;
  }
  static void copy(std::span<float> to, std::span<const float> from) {
    if (!from.empty()) std::memcpy(to.data(), from.data(), from.size() * sizeof(float));
  }

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
  std::size_t offset_ = 0, length_ = 0, gathered_ = 0;  // the shared-memory round: its floats, peers gathered
  std::uint64_t round_ = 0;                            // its number since the window was allocated
  bool yield_ = false;                                 // waiting yields the core (oversubscribed())
  bool in_place_ = false;                              // data_ lies in the shared data (share()), at this float:
  std::size_t in_place_offset_ = 0;
  detail::ring_hierarchy<C>* across_ = nullptr;        // hierarchical: the ring across hosts between sum and gather
  std::size_t across_chunk_floats_ = kRingChunkAuto;
};

namespace detail {
/// The hierarchical transport's state in a RingWorkspace: the split by host and the ring across hosts.
template <CommunicatorPolicy C>
struct ring_hierarchy {
  explicit ring_hierarchy(comm::HostSplit<C> s) : split(std::move(s)) {}
  comm::HostSplit<C> split;
  RingWorkspace<C> work;  ///< the ring across hosts's buffers
  RingOperation<C> ring;  ///< the ring across hosts of the segment being summed
};
}  // namespace detail

/// Collective: every rank's `data` becomes the element-wise sum over all ranks, by the pipelined ring.
/// Pre: data.size() is the same on every rank (any size, 0 and fewer than the ranks included) and so is
/// `chunk_floats` (0: one chunk per segment; kRingChunkAuto: by the hosts, see ring_chunk_floats).
/// `transport` picks messages or the shared window (automatic: the window when every rank is on one host);
/// the chunk size matters to messages only.
template <CommunicatorPolicy C>
void ring_allreduce_sum(C& comm, std::span<float> data, RingWorkspace<C>& work,
                        std::size_t chunk_floats = kRingChunkAuto,
                        RingTransport transport = RingTransport::automatic) {
  RingOperation<C> ring;
  ring.start(comm, data, work, chunk_floats, detail::kRingTag, transport);
  ring.advance(/*block=*/true);
}

/// The same, with buffers allocated for this call.
template <CommunicatorPolicy C>
void ring_allreduce_sum(C& comm, std::span<float> data, std::size_t chunk_floats = kRingChunkAuto,
                        RingTransport transport = RingTransport::automatic) {
  RingWorkspace<C> work;
  ring_allreduce_sum(comm, data, work, chunk_floats, transport);
}

}  // namespace sinew::dist
