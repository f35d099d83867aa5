// sinew/core/cross_worker.hpp: a blocking sum over every worker of a data-parallel job, handed to the layers
// whose forward or backward needs one (SyncBatchNorm2d, layers/batch_norm.hpp).
//
// The Model holds one (Model::set_sum_over_workers) and passes it to its ops with their parameter slots; the
// Trainer installs the strategy's sum_over_workers (dist/strategy_spec.hpp) there. In core/, below layers/ and
// dist/, because both sides name it and neither may include the other (docs/architecture.md).
#pragma once

#include <concepts>
#include <functional>
#include <span>
#include <type_traits>
#include <utility>

namespace sinew {

/// An element-wise, in-place, blocking sum over the workers: afterwards `data` holds the sum of every worker's
/// `data`. Collective: every worker calls it with as many floats, in the same order. Default: one worker,
/// the identity (a Model used alone, or under dist::Local).
class CrossWorkerSum {
 public:
  /// One worker: the sum of one is itself.
  CrossWorkerSum() = default;
  /// The sum that `sum(std::span<float>)` computes (a strategy's all-reduce, bound to it).
  template <class F>
    requires(std::invocable<F&, std::span<float>> && !std::same_as<std::remove_cvref_t<F>, CrossWorkerSum>)
  explicit CrossWorkerSum(F sum) : sum_(std::move(sum)) {}

  /// Sums `data` over the workers, in place.
  void operator()(std::span<float> data) const {
    if (sum_) sum_(data);
  }

 private:
  std::function<void(std::span<float>)> sum_;  // empty: one worker
};

}  // namespace sinew
