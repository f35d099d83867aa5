// sinew/metrics/progress.hpp: progress within an epoch, for a Trainer's step callback.
//
//   sinew::metrics::Progress progress(std::cout, {.terminal = sinew::metrics::is_terminal(stdout), .epochs = 5});
//   trainer.set_step_callback(std::ref(progress));
//   auto stats = trainer.train_epoch(train);  // the live line is gone when the epoch ends
//
// On a terminal it keeps one live line (steps done/total, images/s, mean loss so far, ETA), redrawn in place
// with a carriage return at most every redraw_seconds and erased after the epoch's last step. Elsewhere (a
// log file, a pipe) it prints one plain line every every_seconds, and none in an epoch shorter than that. The
// clock is a parameter so that tests can drive it.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdio>
#include <functional>
#include <ostream>
#include <string>

#include <unistd.h>

namespace sinew::metrics {

/// Whether `stream` is a terminal (isatty), where a live line can be redrawn.
inline bool is_terminal(std::FILE* stream) { return ::isatty(::fileno(stream)) == 1; }

/// How a Progress reporter draws: a live line on a terminal or plain lines elsewhere, and how often.
struct ProgressOptions {
  bool terminal = false;        ///< redraw one live line in place; false: plain lines, every every_seconds
  double redraw_seconds = 0.25; ///< on a terminal, redraw at most this often
  double every_seconds = 10;    ///< elsewhere, one line this often
  int epochs = 0;               ///< shown as "epoch e/epochs" (0: unknown, "epoch e")
  int workers = 1;              ///< images/s is this rank's times this (data-parallel workers keep one pace)
};

/// Progress within an epoch for a Trainer's step callback: steps done, images/s, mean loss and ETA, on one
/// live line on a terminal or one plain line every few seconds elsewhere. Attach with std::ref (it keeps state).
class Progress {
 public:
  using clock_fn = std::function<double()>;  ///< monotonic seconds

  /// The default clock: std::chrono::steady_clock in seconds.
  static double steady_seconds() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  }

  /// Writes to `out` as `options` say, reading time from `now` (a test passes a fake clock).
  explicit Progress(std::ostream& out, ProgressOptions options = {}, clock_fn now = steady_seconds)
      : out_(out), o_(options), now_(std::move(now)) {}
  Progress(const Progress&) = delete;  // it holds the line's state: attach it with std::ref
  Progress& operator=(const Progress&) = delete;
  ~Progress() { end_epoch(); }

  /// A Trainer's StepInfo (sinew/trainer.hpp), for set_step_callback(std::ref(progress)).
  template <class StepInfo>
  void operator()(const StepInfo& s) {
    step(s.epoch, s.step, s.epoch_steps, s.samples, s.loss, s.phases.total());
  }

  /// After step `step` (0-based) of `steps` in epoch `epoch` (0-based; `steps` 0 if unknown), which took
  /// `seconds` for `samples` samples with mean loss `loss`.
  void step(int epoch, std::size_t step, std::size_t steps, std::size_t samples, double loss, double seconds) {
    const double t = now_();
    if (epoch != epoch_ || step < done_) {  // a new epoch: it began when its first step did
      epoch_ = epoch;
      start_ = last_ = t - seconds;
      samples_ = 0;
      loss_sum_ = 0;
      drawn_ = false;
    }
    done_ = step + 1;
    steps_ = steps;
    samples_ += samples;
    loss_sum_ += loss * double(samples);
    if (o_.terminal) {
      if (steps > 0 && done_ >= steps) return end_epoch();  // the epoch's own summary follows
      if (drawn_ && t - last_ < o_.redraw_seconds) return;
      out_ << '\r' << line(t) << "\033[K" << std::flush;  // erase what a longer line left
      drawn_ = true;
      last_ = t;
    } else if (t - last_ >= o_.every_seconds) {
      out_ << line(t) << '\n' << std::flush;
      last_ = t;
    }
  }

  /// Erases the live line (on a terminal, when one is shown); call it when an epoch stops early.
  void end_epoch() {
    if (o_.terminal && drawn_) out_ << "\r\033[K" << std::flush;
    drawn_ = false;
  }

  /// The line shown at time `t`: "epoch 2/5  step 412/938  1234 img/s  loss 0.4321  ETA 0:42".
  std::string line(double t) const {
    const double elapsed = t - start_;
    const double rate = elapsed > 0 ? double(samples_) * o_.workers / elapsed : 0;
    const double loss = samples_ > 0 ? loss_sum_ / double(samples_) : 0.0;
    std::string s = "epoch " + std::to_string(epoch_ + 1);
    if (o_.epochs > 0) s.append("/").append(std::to_string(o_.epochs));  // append: GCC 12 warns on "/" + temporary
    s.append("  step ").append(std::to_string(done_));
    if (steps_ > 0) s.append("/").append(std::to_string(steps_));
    char buf[64];
    std::snprintf(buf, sizeof buf, "  %.0f img/s  loss %.4f", rate, loss);
    s.append(buf);
    if (steps_ > 0 && elapsed > 0)
      s.append("  ETA ").append(duration(elapsed / double(done_) * double(steps_ - done_)));
    return s;
  }

  /// Seconds as m:ss, or h:mm:ss from an hour.
  static std::string duration(double seconds) {
    const long long total = seconds > 0 ? static_cast<long long>(seconds + 0.5) : 0;
    char buf[32];
    if (total >= 3600)
      std::snprintf(buf, sizeof buf, "%lld:%02lld:%02lld", total / 3600, total / 60 % 60, total % 60);
    else
      std::snprintf(buf, sizeof buf, "%lld:%02lld", total / 60, total % 60);
    return buf;
  }

 private:
  std::ostream& out_;
  ProgressOptions o_;
  clock_fn now_;
  int epoch_ = -1;
  std::size_t done_ = 0, steps_ = 0, samples_ = 0;
  double loss_sum_ = 0, start_ = 0, last_ = 0;
  bool drawn_ = false;
};

}  // namespace sinew::metrics
