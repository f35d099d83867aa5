// sinew/metrics/timer.hpp: wall-clock timing and the per-step phase breakdown.
#pragma once

#include <chrono>

namespace sinew::metrics {

using clock = std::chrono::steady_clock;

/// Seconds since construction or the last lap().
class Stopwatch {
 public:
  Stopwatch() : start_(clock::now()) {}
  /// Seconds since construction or the last lap().
  double elapsed() const { return std::chrono::duration<double>(clock::now() - start_).count(); }
  /// Seconds since the last lap (or construction), and restarts.
  double lap() {
    const auto now = clock::now();
    const double s = std::chrono::duration<double>(now - start_).count();
    start_ = now;
    return s;
  }
  /// When the current lap began (construction or the last lap()).
  clock::time_point since() const noexcept { return start_; }

 private:
  clock::time_point start_;
};

/// Where a training step's time goes. comm is the communication the step waited for (exposed);
/// comm_hidden is communication that overlapped computation (reported, not part of the step).
struct PhaseSeconds {
  /// seconds in each phase: waiting for the loader, forward (with the loss), backward, exposed communication,
  /// the optimizer update, and communication hidden behind backward (not part of total())
  /// @{
  double load = 0, forward = 0, backward = 0, comm = 0, update = 0, comm_hidden = 0;
  /// @}

  /// The step's time: every phase but comm_hidden.
  double total() const { return load + forward + backward + comm + update; }
  /// Adds another step's (or epoch's) phases.
  PhaseSeconds& operator+=(const PhaseSeconds& o) {
    load += o.load, forward += o.forward, backward += o.backward;
    comm += o.comm, update += o.update, comm_hidden += o.comm_hidden;
    return *this;
  }
};

}  // namespace sinew::metrics
