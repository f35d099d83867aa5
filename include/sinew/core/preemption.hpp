// sinew/core/preemption.hpp: the signals that announce a preemption (Slurm's --signal, a spot instance's
// notice), caught into a flag that training reads between steps.
//
//   trainer.set_preemption({.directory = "ckpt"});  // SIGTERM or SIGUSR1: finish the step, save, throw
//   ...
//   catch (const sinew::preempted& p) { return p.exit_status(); }  // 75, EX_TEMPFAIL: "try again"
//
// The handler only stores the signal's number in a lock-free atomic (async-signal-safe); the Trainer reads it
// at points every rank reaches alike, agrees on it with the other ranks, saves and throws sinew::preempted
// (trainer.hpp). Handlers are installed with SA_RESTART, so a read or an MPI call the signal interrupts goes on.
// A second signal while the run saves only sets the flag again: the handler stays, so the save is not cut short.
// The previous handlers come back when the watch is destroyed, unless a preemption was acted on (keep()): then
// a late signal cannot end the process on its way out either.
#pragma once

#include <signal.h>

#include <atomic>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "sinew/core/error.hpp"

namespace sinew {

/// What Trainer::set_preemption acts on.
struct Preemption {
  /// Where the run is saved when a signal comes (every rank must see it); empty: preemption is off.
  std::filesystem::path directory;
  /// The signals that announce a preemption: Slurm's --signal sends SIGUSR1 when asked (see
  /// docs/several-hosts.md), and SIGTERM comes from scancel, Kubernetes and most spot-instance agents.
  std::vector<int> signals = {SIGTERM, SIGUSR1};
};

/// "SIGUSR1" for the signals a preemption is announced with; "signal N" for others.
inline std::string signal_name(int number) {
  switch (number) {
    case SIGTERM: return "SIGTERM";
    case SIGUSR1: return "SIGUSR1";
    case SIGUSR2: return "SIGUSR2";
    case SIGINT: return "SIGINT";
    case SIGHUP: return "SIGHUP";
    default: return "signal " + std::to_string(number);
  }
}

namespace detail {
// The last preemption signal caught (0: none). A lock-free atomic is safe to store from a signal handler.
inline std::atomic<int> preemption_signal{0};
static_assert(std::atomic<int>::is_always_lock_free, "the preemption flag must be lock-free to be set in a handler");

extern "C" inline void note_preemption_signal(int number) {
  preemption_signal.store(number, std::memory_order_relaxed);
}
}  // namespace detail

/// The preemption signal caught since the last take (its number), or 0; clears it.
inline int take_preemption_signal() noexcept { return detail::preemption_signal.exchange(0); }
/// The preemption signal caught and not yet taken, or 0.
inline int pending_preemption_signal() noexcept { return detail::preemption_signal.load(); }

/// While it lives, the given signals set the preemption flag instead of their default action (ending the
/// process); destroyed, it puts the previous handlers back.
class preemption_watch {
 public:
  /// Installs the handler for each of `signals` (SIGKILL and SIGSTOP cannot be caught: refused).
  explicit preemption_watch(const std::vector<int>& signals) {
    struct sigaction action;
    std::memset(&action, 0, sizeof action);
    action.sa_handler = detail::note_preemption_signal;
    action.sa_flags = SA_RESTART;
    sigemptyset(&action.sa_mask);
    for (const int number : signals) {
      struct sigaction old;
      if (number == SIGKILL || number == SIGSTOP || sigaction(number, &action, &old) != 0) {
        restore();
        throw error("preemption: cannot catch " + signal_name(number) +
                    " (SIGKILL and SIGSTOP cannot be caught; choose SIGTERM, SIGUSR1 or SIGUSR2)");
      }
      previous_.push_back({number, old});
    }
  }
  preemption_watch(const preemption_watch&) = delete;
  preemption_watch& operator=(const preemption_watch&) = delete;
  ~preemption_watch() { restore(); }
  /// Leaves the handlers installed when it is destroyed: once a preemption saved the run, a later signal must
  /// not end the process on its way out (its exit status says the run was saved).
  void keep() noexcept { previous_.clear(); }

 private:
  void restore() noexcept {
    for (auto it = previous_.rbegin(); it != previous_.rend(); ++it) sigaction(it->first, &it->second, nullptr);
    previous_.clear();
  }
  std::vector<std::pair<int, struct sigaction>> previous_;
};

}  // namespace sinew
