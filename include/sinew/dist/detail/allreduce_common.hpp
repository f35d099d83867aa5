// sinew/dist/detail/allreduce_common.hpp: what the all-reduce strategies share: the start-up agreement and
// broadcast, gradient buckets that overlap backward, the watchdog, and turning the summed gradient into the mean.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sinew/comm/agreement.hpp"
#include "sinew/comm/communicator_spec.hpp"
#include "sinew/core/elementwise.hpp"
#include "sinew/core/error.hpp"
#include "sinew/core/message_tags.hpp"
#include "sinew/dist/buckets.hpp"
#include "sinew/dist/options.hpp"
#include "sinew/metrics/timeline.hpp"
#include "sinew/metrics/timer.hpp"
#include "sinew/optim/optimizer_spec.hpp"

namespace sinew::dist::detail {

/// Checks that every rank has as many parameters, the same optimizer, strategy settings (`extra`) and the
/// caller's configuration text, then makes every rank's parameters rank 0's. The optimizer is fresh (the
/// trainer creates it just before), so it holds no state that could differ.
template <CommunicatorPolicy C, OptimizerPolicy O>
void agree_and_broadcast(C& comm, std::span<float> params, std::string_view who, std::string_view configuration,
                         std::span<const comm::Fact> extra = {}) {
  std::vector<comm::Fact> facts = {{"parameter count", params.size()},
                                    {"optimizer", comm::fingerprint(O::kName), true},
                                    {"configuration text", comm::fingerprint(configuration), true}};
  facts.insert(facts.end(), extra.begin(), extra.end());
  comm::require_agreement(comm, std::span<const comm::Fact>(facts), who);
  comm.broadcast(params, 0);
}

/// x *= factor, vectorised.
inline void scale(std::span<float> x, float factor) {
  float* p = x.data();
  simd::transform(0, x.size(), [&](auto v, std::size_t i) {
    using V = decltype(v);
    simd::store(p + i, simd::load<V>(p + i) * V(factor));
  });
}

/// The floats one rank sends in a ring all-reduce of n floats over p ranks (comm/ring_allreduce.hpp): every segment
/// but one in the reduce-scatter and every segment but another in the all-gather, 2 (p - 1) n / p in all, the
/// least any all-reduce sends.
constexpr std::size_t ring_wire_floats(std::size_t n, std::size_t p, std::size_t rank) noexcept {
  if (p <= 1) return 0;
  const auto segment = [&](std::size_t s) { s %= p; return (s + 1) * n / p - s * n / p; };
  return 2 * n - segment(rank + 1) - segment(rank + 2);
}

/// The options every all-reduce strategy has besides its own.
struct bucket_options {
  std::size_t bucket_bytes = kDefaultBucketBytes;  ///< gradient bytes per all-reduce; 0: one for all
  bool overlap = true;            ///< start each bucket's all-reduce during backward (off: all after backward)
  /// a collective waited on longer aborts the job, naming silent ranks; 0: never
  double timeout_seconds = kDefaultTimeoutSeconds;
  bool elastic = false;  ///< go on without a rank that dies (see allreduce_base::shrink_after_loss)
};

/// The elastic option's check at start-up, the same on every rank: refuses (comm_error, every rank alike) where
/// the communicator cannot go on after a rank dies, saying why.
template <CommunicatorPolicy Comm>
void require_fault_tolerance(std::string_view who) {
  std::string why;
  if constexpr (req::has_shrink<Comm>)
    why = Comm::fault_tolerance_missing();
  else
    why = "its communicator cannot shrink to the ranks still alive (comm/communicator_spec.hpp: req::has_shrink)";
  if (!why.empty())
    throw comm_error(std::string(who) + ": options.elastic (training on after a rank dies) is not possible: " + why +
                     "; without it a dead rank ends the job (docs/distribution-and-faults.md)");
}

/// What MpiAllReduce and RingAllReduce share: every rank is a worker; all_agree; the overlap hooks of
/// strategy_spec.hpp; and the synchronous step (all-reduce the gradients bucket by bucket, divide by the rank
/// count, optimizer step). Derived provides submit(span) (start summing one bucket; buckets come in the same
/// order on every rank) and poll() (advance without blocking; true when every submitted bucket is summed).
template <CommunicatorPolicy Comm, class Derived>
class allreduce_base {
 public:
  int rank() const { return comm_.rank(); }
  int world_size() const { return comm_.size(); }
  bool is_worker() const noexcept { return true; }
  int workers() const { return comm_.size(); }
  int worker_index() const { return comm_.rank(); }
  Comm& communicator() noexcept { return comm_; }

  /// Bytes of gradients this rank has sent since it was built, for reports (bench/dist divides by the steps):
  /// what the ring sends (ring_wire_floats) for each bucket, with either strategy; MPI_Allreduce's own
  /// algorithm may send more (the MPI library picks it). dist::Compressed counts its payloads instead.
  std::uint64_t bytes_sent() const noexcept { return wire_bytes_; }

  /// The buckets start() planned, in the order they are all-reduced (reverse layer order).
  std::span<const Bucket> buckets() const noexcept { return buckets_; }

  /// Whether options.elastic is on: the trainer then goes on without a rank that dies (shrink_after_loss).
  bool elastic() const noexcept { return options_.elastic; }

  /// With options.elastic, on every survivor after one of this strategy's operations threw sinew::rank_lost
  /// (collective over the survivors): the communicator becomes the survivors' (Comm::shrink, which revokes the
  /// old one, so that no survivor waits in it for a peer that waits elsewhere), what was in flight on the old
  /// one is dropped, and the next step sums over the survivors; the gradients of the interrupted step are
  /// left half summed and the parameters as they were (elastic steps update only after every sum, below).
  /// Returns the ranks lost, as the old communicator numbered them.
  std::vector<int> shrink_after_loss() {
    std::vector<int> lost;
    if constexpr (req::has_shrink<Comm>) {
      Comm survivors = comm_.shrink(lost);
      derived().drop_in_flight();  // their requests belong to the old communicator, freed next
      agreement_.reset();
      comm_ = std::move(survivors);
      in_step_ = busy_ = agreement_pending_ = false;
      agreed_ = true;
      next_bucket_ = began_ = finished_ = updated_bucket_ = updated_floats_ = 0;
      derived().after_shrink();
    } else {
      require_fault_tolerance<Comm>(who_);
    }
    return lost;
  }

  /// Whether `ok` holds on every rank; collective. The trainer asks this before acting on a local NaN loss,
  /// so that all ranks stop together instead of the healthy ones waiting forever in the next all-reduce.
  bool all_agree(bool ok) {
    float bad = ok ? 0.0f : 1.0f;
    auto request = comm_.iallreduce_sum(std::span<float>(&bad, 1));
    wait_watched([&] { return bool(request.test()); }, "the all-reduce of the NaN check");
    return bad == 0.0f;
  }

  /// The agreement of all_agree, carried beside this step's gradient all-reduce instead of waited for on its
  /// own (strategy_spec.hpp: req::has_deferred_agreement): collective, before the step's update(), which then
  /// applies the optimizer step only if `ok` holds on every rank; agreed() says afterwards whether it did. The
  /// one-float sum starts now and is in flight with the buckets, so no rank waits for another between forward
  /// and backward; update() waits for it before it changes the first parameter.
  void agree_during_update(bool ok) {
    agreement_flag_ = ok ? 0.0f : 1.0f;
    agreement_pending_ = true;
    if (comm_.size() > 1) agreement_.emplace(comm_.iallreduce_sum(std::span<float>(&agreement_flag_, 1)));
  }
  /// After update(): false when agree_during_update was passed false on some rank, and the step was not applied
  /// (parameters and optimizer state as before it); true otherwise.
  bool agreed() const noexcept { return agreed_; }

  /// Collective: comm::require_agreement on this strategy's communicator (the trainer checks its batch size
  /// and network with it).
  void require_agreement(std::span<const comm::Fact> facts, std::string_view who, bool counted = true) {
    comm::require_agreement(comm_, facts, who, counted);
  }

  /// Collective: the model's running statistics become their mean over the ranks, the same floats on every
  /// rank (the buffer hook of strategy_spec.hpp). Derived provides sum_buffers(span), a blocking sum that
  /// leaves every rank with the same floats.
  void synchronize_buffers(std::span<float> buffers) {
    if (comm_.size() == 1 || buffers.empty()) return;
    derived().sum_buffers(buffers);
    scale(buffers, 1.0f / float(comm_.size()));
  }

  /// Records each bucket's all-reduce, the wait and the update into `timeline` (null: nothing); the trainer's
  /// start_trace() sets it (metrics/timeline.hpp).
  void set_timeline(metrics::Timeline* timeline) noexcept { timeline_ = timeline; }

  // The overlap hooks (see strategy_spec.hpp).

  /// Before start(): where the layers begin in the flat gradient buffer, for cutting buckets on them.
  void set_layer_starts(std::span<const std::size_t> starts) { layer_starts_.assign(starts.begin(), starts.end()); }

  /// Before each backward: nothing of `grads` is final yet.
  void backward_begins(std::span<float> grads) {
    if (buckets_total_ != grads.size()) plan(grads.size());
    grads_ = grads;
    next_bucket_ = 0;
    ready_from_ = grads.size();
    in_step_ = true;
    busy_ = false;
    hook_seconds_ = busy_hook_seconds_ = hidden_seconds_ = 0;
    began_ = finished_ = 0;
    updated_bucket_ = updated_floats_ = 0;
    if (!agreement_pending_) agreed_ = true;  // no NaN check this step
  }

  /// During backward: grads[first, end) are final. Starts every bucket that is now complete, and moves the
  /// ones in flight on.
  void gradients_ready(std::size_t first) {
    if (!in_step_ || !options_.overlap || comm_.size() == 1) return;
    const auto entered = metrics::clock::now();
    ready_from_ = std::min(ready_from_, first);
    submit_ready();
    const bool busy = busy_;
    if (busy && derived().poll()) idle(metrics::clock::now());
    const double spent = std::chrono::duration<double>(metrics::clock::now() - entered).count();
    hook_seconds_ += spent;
    if (busy) busy_hook_seconds_ += spent;
  }

 protected:
  allreduce_base() = default;
  allreduce_base(Comm comm, bucket_options o, std::string_view who)
      : comm_(std::move(comm)), options_(o), who_(who) {}

  /// Facts for start()'s agreement: ranks with other buckets would sum spans of other sizes.
  std::vector<comm::Fact> bucket_facts(std::size_t parameters) {
    plan(parameters);
    return {{"gradient bucket size in bytes", options_.bucket_bytes},
            {"gradient bucket layout", fingerprint(std::span<const Bucket>(buckets_)), true}};
  }

  /// params -= optimizer(mean of every rank's grads); grads holds the mean. Sums the buckets the hooks have not
  /// started, waits for all, and reports what it waited for: the hooks' time and the wait as exposed
  /// communication, the time buckets were in flight while backward computed as comm_hidden. It adds to comm,
  /// comm_hidden and update only (the trainer times backward without the hooks).
  ///
  /// With an optimizer that steps in ranges (optim/optimizer_spec.hpp: req::has_range_step), each bucket is
  /// averaged and updated as soon as its all-reduce has ended, in pieces of at most kUpdatePieceFloats between
  /// polls, so that the optimizer's update of the first buckets runs while the last ones are still in flight
  /// (the update is memory-bound and the wait for the last bucket mostly idle). The same floats result as from
  /// one step over all, bit for bit. The pieces' time is update, the polls between them communication.
  /// A deferred agreement (agree_during_update) is waited for before the first piece; if it failed, nothing is
  /// updated and agreed() is false.
  template <class O>
  void average_and_step(std::span<float> params, std::span<float> grads, O& optimizer, metrics::PhaseSeconds& phases) {
    metrics::Stopwatch watch;
    const auto waiting = metrics::clock::now();
    if (!in_step_ || grads_.data() != grads.data() || grads_.size() != grads.size()) backward_begins(grads);
    if (busy_) hidden_seconds_ += std::chrono::duration<double>(waiting - busy_since_).count();
    ready_from_ = 0;
    submit_ready();
    phases.comm_hidden += std::max(0.0, hidden_seconds_ - busy_hook_seconds_);
    // Elastic: no update before every sum has ended, so that a rank dying mid-step leaves each survivor's
    // parameters either wholly updated or as they were (the trainer then takes the furthest).
    bool whole = true;
    if constexpr (req::has_range_step<O>) {
      if (!options_.elastic) {
        double updating = 0;  // seconds in update pieces within the wait
        wait_watched(
            [&] {
              const bool summed = derived().poll();
              if (!agreement_known() || (updated_bucket_ < buckets_.size() && updated_bucket_ >= finished_ && !summed))
                return false;
              if (!agreed_ || updated_bucket_ == buckets_.size()) return summed;
              updating += update_piece(params, optimizer);
              return summed && updated_bucket_ == buckets_.size();
            },
            "the gradient all-reduce");
        // On the timeline the wait spans the pieces updated within it (each an update event of its own).
        phases.comm += metrics::lap(watch, timeline_, metrics::TraceKind::wait) - updating + hook_seconds_;
        if (agreed_) optimizer.end_step();
        phases.update += updating + watch.lap();
        whole = false;
      }
    }
    if (whole) {
      wait_watched([&] { return derived().poll() && agreement_known(); }, "the gradient all-reduce");
      phases.comm += metrics::lap(watch, timeline_, metrics::TraceKind::wait) + hook_seconds_;
      if (agreed_) {
        if (comm_.size() > 1) scale(grads, 1.0f / float(comm_.size()));
        optimizer.step(params, grads);
      }
      phases.update += metrics::lap(watch, timeline_, metrics::TraceKind::update);
    }
    in_step_ = false;
    ++steps_;
  }

  /// Averages and updates the next piece (at most kUpdatePieceFloats) of the first bucket not yet updated,
  /// whose all-reduce has ended; returns the seconds it took (recorded as an update with a timeline).
  template <class O>
  double update_piece(std::span<float> params, O& optimizer) {
    const Bucket b = buckets_[updated_bucket_];
    const std::size_t from = b.begin + updated_floats_, to = std::min(b.end, from + kUpdatePieceFloats);
    const auto begun = metrics::clock::now();
    if (comm_.size() > 1) scale(grads_.subspan(from, to - from), 1.0f / float(comm_.size()));
    optimizer.step_range(params, grads_, from, to);
    const auto ended = metrics::clock::now();
    if (timeline_)
      timeline_->record(metrics::TraceKind::update, begun, ended, std::int32_t(updated_bucket_), to - from);
    updated_floats_ = to - b.begin;
    if (to == b.end) ++updated_bucket_, updated_floats_ = 0;
    return std::chrono::duration<double>(ended - begun).count();
  }

  /// Whether the deferred agreement of this step (if any) has ended; agreed_ holds its outcome when it has
  /// (true for a step without one: backward_begins resets it).
  bool agreement_known() {
    if (!agreement_pending_) return true;
    if (agreement_ && !agreement_->test()) return false;
    agreement_.reset();
    agreement_pending_ = false;
    agreed_ = agreement_flag_ == 0.0f;
    return true;
  }

  /// Derived calls these as a bucket's all-reduce starts and as its end is seen (buckets start and end in
  /// submission order): with a timeline, the bucket's event is recorded from one to the other.
  /// @{
  void bucket_begins() noexcept {
    if (timeline_ && began_ < bucket_began_.size()) bucket_began_[began_] = metrics::clock::now();
    ++began_;
  }
  void bucket_ends() noexcept {
    if (timeline_ && finished_ < began_ && finished_ < buckets_.size())
      timeline_->record(metrics::TraceKind::allreduce, bucket_began_[finished_], metrics::clock::now(),
                        std::int32_t(finished_), buckets_[finished_].size());
    ++finished_;
  }
  /// @}

  /// Calls done() until it returns true. If it is not done within options.timeout_seconds, aborts the job
  /// naming the ranks that did not answer a roll call: a rank that died or hangs would otherwise leave the
  /// others blocked forever (Open MPI ends the job itself when a process exits, but not when one hangs). The
  /// roll call is part of the budget: it starts roll_call_grace() before the limit and ends by it, so the job
  /// ends within timeout_seconds of the moment this rank began to wait (plus the second MPI_Abort takes).
  /// Only the collectives inside a training step are watched. The start-up agreement and the trainer's
  /// agreement at each epoch wait without limit: ranks may arrive there far apart for good reasons (loading
  /// data, evaluating or checkpointing on one rank), and once past them they run in step, so a wait beyond the
  /// limit inside a step means a rank has stopped.
  template <class Done>
  void wait_watched(Done&& done, std::string_view what) {
    if (options_.timeout_seconds <= 0 || comm_.size() == 1) {
      while (!done()) {
      }
      return;
    }
    const auto start = metrics::clock::now();
    const auto limit = std::chrono::duration<double>(options_.timeout_seconds - roll_call_grace());
    for (unsigned spins = 1; !done(); ++spins)
      if (spins % 1024 == 0 && metrics::clock::now() - start > limit) roll_call_and_abort(what);
  }

  /// How long the roll call waits for answers (the ranks reach it up to a step apart): the last fifth of the
  /// budget, at least 1 s (half the budget if that is shorter) and at most 5 s.
  double roll_call_grace() const {
    const double t = options_.timeout_seconds;
    return std::clamp(t / 5, std::min(1.0, t / 2), 5.0);
  }

  Comm comm_;
  bucket_options options_;
  std::uint64_t wire_bytes_ = 0;  ///< see bytes_sent()

 private:
  Derived& derived() { return static_cast<Derived&>(*this); }

  void plan(std::size_t total) {
    // Layer starts that do not fit this buffer (a strategy used without a model) count as one layer.
    const bool fits = !layer_starts_.empty() && layer_starts_.back() < total &&
                      std::is_sorted(layer_starts_.begin(), layer_starts_.end());
    buckets_ = plan_buckets(fits ? std::span<const std::size_t>(layer_starts_) : std::span<const std::size_t>(),
                            total, options_.bucket_bytes / sizeof(float));
    buckets_total_ = total;
    bucket_began_.assign(buckets_.size(), {});
  }

  void submit_ready() {
    while (next_bucket_ < buckets_.size() && buckets_[next_bucket_].begin >= ready_from_) {
      const Bucket b = buckets_[next_bucket_++];
      if (!busy_) busy_ = true, busy_since_ = metrics::clock::now();
      wire_bytes_ += sizeof(float) * ring_wire_floats(b.size(), std::size_t(comm_.size()), std::size_t(comm_.rank()));
      derived().submit(grads_.subspan(b.begin, b.size()));
    }
  }

  void idle(metrics::clock::time_point now) {
    hidden_seconds_ += std::chrono::duration<double>(now - busy_since_).count();
    busy_ = false;
  }

  [[noreturn]] void roll_call_and_abort(std::string_view what) {
    const int p = comm_.size(), self = comm_.rank();
    const double grace = roll_call_grace();
    float here = 1.0f;
    std::vector<float> answers(std::size_t(p), 0.0f);
    using request = decltype(comm_.irecv(std::span<float>(), 0, 0));
    std::vector<request> sends, receives;
    for (int peer = 0; peer < p; ++peer) {
      if (peer == self) continue;
      receives.push_back(
          comm_.irecv(std::span<float>(&answers[std::size_t(peer)], 1), peer, message_tag::kRollCall));
      sends.push_back(comm_.isend(std::span<const float>(&here, 1), peer, message_tag::kRollCall));
    }
    std::vector<bool> answered(std::size_t(p), false);
    answered[std::size_t(self)] = true;
    const auto start = metrics::clock::now();
    int missing = p - 1;
    while (missing > 0 && metrics::clock::now() - start < std::chrono::duration<double>(grace))
      for (int peer = 0, i = 0; peer < p; ++peer) {
        if (peer == self) continue;
        if (!answered[std::size_t(peer)] && receives[std::size_t(i)].test()) answered[std::size_t(peer)] = true, --missing;
        ++i;
      }
    std::string silent;
    for (int peer = 0; peer < p; ++peer)
      if (!answered[std::size_t(peer)]) silent += (silent.empty() ? "" : ", ") + std::to_string(peer);
    char seconds[64];
    std::snprintf(seconds, sizeof seconds, "%g s", options_.timeout_seconds);
    std::string message = std::string(who_) + ": step " + std::to_string(steps_) + " waited " + seconds + " for " +
                          std::string(what) + " to complete; ";
    if (silent.empty())
      message += "every rank answered a roll call, so the ranks wait in different collectives: every rank must "
                 "make the same calls in the same order";
    else
      message += std::string(missing == 1 ? "rank " : "ranks ") + silent + (missing == 1 ? " does" : " do") +
                 " not answer a roll call, so " + (missing == 1 ? "it has" : "they have") + " probably died or hang" +
                 (missing == 1 ? "s" : "");
    message += " (options.timeout_seconds sets this limit; 0 waits forever)";
    comm_.abort(2, message);
  }

  std::string_view who_ = "dist";
  std::vector<std::size_t> layer_starts_;
  std::vector<Bucket> buckets_;
  std::size_t buckets_total_ = std::size_t(-1);
  std::span<float> grads_;
  std::size_t next_bucket_ = 0, ready_from_ = 0;
  bool in_step_ = false, busy_ = false;
  metrics::clock::time_point busy_since_{};
  double hook_seconds_ = 0, busy_hook_seconds_ = 0, hidden_seconds_ = 0;
  std::int64_t steps_ = 0;
  metrics::Timeline* timeline_ = nullptr;               // null: no trace
  std::vector<metrics::clock::time_point> bucket_began_;  // per bucket, with a timeline
  std::size_t began_ = 0, finished_ = 0;                // buckets started and seen ended in this step
  std::size_t updated_bucket_ = 0, updated_floats_ = 0;  // buckets wholly updated this step, floats of the next
  // agree_during_update's one-float sum: in flight, its flag, whether its outcome is still to be seen, the outcome
  using agreement_request = decltype(std::declval<Comm&>().iallreduce_sum(std::span<float>()));
  std::optional<agreement_request> agreement_;
  float agreement_flag_ = 0;
  bool agreement_pending_ = false, agreed_ = true;
};

}  // namespace sinew::dist::detail
