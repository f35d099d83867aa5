// sinew/optim/schedule.hpp: learning-rate schedules, as functions of the step (and of the base rate).
//
// A schedule s has s(base_lr, step) -> lr; the trainer sets the optimizer's rate before every step.
#pragma once

#include <algorithm>
#include <cmath>
#include <concepts>
#include <cstdint>

namespace sinew::optim {

template <class S>
concept SchedulePolicy = requires(const S& s, float lr, std::int64_t step) {
  { s(lr, step) } -> std::convertible_to<float>;
};

/// The base rate throughout.
struct Constant {
  /// The rate at `step`: the base rate.
  float operator()(float lr, std::int64_t) const noexcept { return lr; }
};

/// Multiplies the rate by gamma every `every` steps (torch StepLR, counted in steps).
struct StepDecay {
  /// steps between two decays; <= 0 counts as 1
  std::int64_t every = 1000;
  /// the factor of each decay
  float gamma = 0.1f;
  /// The rate at `step`: lr x gamma^(step / every).
  float operator()(float lr, std::int64_t step) const noexcept {
    return lr * std::pow(gamma, float(step / (every > 0 ? every : 1)));
  }
};

/// Linear warm-up over `warmup` steps, then cosine decay to `floor` x base at `total` steps.
struct WarmupCosine {
  /// steps of linear warm-up, from lr / warmup to lr
  std::int64_t warmup = 0;
  /// the step at which the cosine reaches `floor` (and stays)
  std::int64_t total = 1;
  /// the final rate as a fraction of the base rate
  float floor = 0.0f;
  /// The rate at `step`.
  float operator()(float lr, std::int64_t step) const noexcept {
    if (step < warmup) return lr * float(step + 1) / float(warmup);
    const double progress = std::min(1.0, double(step - warmup) / double(std::max<std::int64_t>(1, total - warmup)));
    return lr * float(floor + (1 - floor) * 0.5 * (1 + std::cos(3.14159265358979323846 * progress)));
  }
};

static_assert(SchedulePolicy<Constant> && SchedulePolicy<StepDecay> && SchedulePolicy<WarmupCosine>);

}  // namespace sinew::optim

