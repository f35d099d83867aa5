// sinew/dist/detail/allreduce_common.hpp: what the all-reduce strategies share: the start-up agreement and
// broadcast, and turning the summed gradient into the mean.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "sinew/backend/simd/elementwise.hpp"
#include "sinew/comm/agreement.hpp"
#include "sinew/metrics/timer.hpp"
#include "sinew/comm/communicator_spec.hpp"
#include "sinew/optim/optimizer_spec.hpp"

namespace sinew::dist::detail {

/// Checks that every rank has as many parameters, the same optimizer, strategy settings (`extra`) and the
/// caller's configuration text, then makes every rank's parameters rank 0's. The optimizer is fresh (the
/// trainer creates it just before), so it holds no state that could differ.
template <Communicator C, Optimizer O>
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

/// What MpiAllReduce and RingAllReduce share: every rank is a worker; all_agree; and the synchronous step
/// (all-reduce the gradients, timed as communication; divide by the rank count; optimizer step, timed as update).
template <Communicator Comm>
class allreduce_base {
 public:
  int rank() const { return comm_.rank(); }
  int world_size() const { return comm_.size(); }
  bool is_worker() const noexcept { return true; }
  int workers() const { return comm_.size(); }
  int worker_index() const { return comm_.rank(); }
  Comm& communicator() noexcept { return comm_; }

  /// Whether `ok` holds on every rank; collective. The trainer asks this before acting on a local NaN loss,
  /// so that all ranks stop together instead of the healthy ones waiting forever in the next all-reduce.
  bool all_agree(bool ok) {
    float bad = ok ? 0.0f : 1.0f;
    comm_.allreduce_sum(std::span<float>(&bad, 1));
    return bad == 0.0f;
  }

 protected:
  allreduce_base() = default;
  explicit allreduce_base(Comm comm) : comm_(std::move(comm)) {}

  /// params -= optimizer(mean of every rank's grads); `sum` all-reduces a span in place. grads holds the mean.
  template <class Sum, class O>
  void average_and_step(std::span<float> params, std::span<float> grads, O& optimizer, metrics::PhaseSeconds& phases,
                        Sum&& sum) {
    metrics::Stopwatch watch;
    sum(grads);
    phases.comm += watch.lap();
    if (comm_.size() > 1) scale(grads, 1.0f / float(comm_.size()));
    optimizer.step(params, grads);
    phases.update += watch.lap();
  }

  Comm comm_;
};

}  // namespace sinew::dist::detail
