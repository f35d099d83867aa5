// sinew/comm/failure.hpp: how a rank that leaves through an exception takes the whole job down with it.
//
// The ranks of a job wait for each other: a rank that throws and leaves (the examples' pattern: catch in
// main, print, return 1) would otherwise sit in MPI_Finalize while the others wait for it in a collective,
// forever. sinew's choice, among a terminate handler, a watchdog over every collective and a guard object:
//
//   * Guards. Every comm::Mpi handle (the last copy of each communicator) and every Trainer of more than one
//     rank holds a comm::unwinding_guard. A guard destroyed by an exception's stack unwinding notes that this
//     rank leaves its coupled work (note_leaving); the Trainer also notes the exception's text as it passes.
//     An exception caught inside the program, with the guards alive, notes nothing: a rank may catch a
//     collective error (every rank throws it alike) and go on. A program that recovers on every rank from an
//     exception that did take a guard down calls clear_leaving().
//   * The exit hook. comm::Mpi registers, when it first initialises MPI, an exit hook that runs before MPI is
//     finalised: if this rank noted leaving, it prints "sinew: rank R aborts the job: it leaves through an
//     exception: <what>" and calls MPI_Abort, which ends every rank within about a second, instead of
//     finalising (after a rank died in a job run with fault tolerance it exits instead: comm/mpi.hpp's
//     abort_job says why). The program's own message (printed by its catch in main) comes first.
//   * Leaving together. An exception every rank throws alike after agreeing on it (sinew::preempted, once the
//     run is saved) is no failure: the Trainer calls note_leaving_together() before throwing it, and guards
//     note nothing after that, so every rank finalises MPI and exits with the program's own status.
//   * An exception that nothing catches reaches std::terminate, whose default handler names it, and abort()
//     ends the process; Open MPI then ends the job and names the rank, as for a crash or kill -9.
//   * A rank that fails before it first builds a comm::Mpi (before MPI is initialised) exits with its non-zero
//     code, and Open MPI ends a job one of whose processes does so (about 1 s).
//   * A rank that hangs or is stopped (SIGSTOP) cannot abort anything: the strategies' watchdogs
//     (options.timeout_seconds) end the job from the other ranks, naming it.
// Data can therefore be opened and checked before or after the trainer is built: a rank whose file is
// missing ends the job either way. A watchdog over the start-up agreement was not chosen: ranks may reach it
// far apart for good reasons (reading a data set), and no bound fits them all.
#pragma once

#include <exception>
#include <mutex>
#include <string>
#include <string_view>

namespace sinew::comm {

/// Why this rank leaves its coupled work, if it does (rank < 0: it does not).
struct leaving_note {
  /// the rank that leaves
  int rank = -1;
  std::string what;  ///< the text of the last exception that passed through a Trainer; empty if none
  bool together = false;  ///< every rank leaves alike (note_leaving_together): nothing to abort
};

namespace detail {
// Never destroyed: the exit hook reads them after static objects built later than it was registered are gone.
inline leaving_note& leaving_state() {
  static leaving_note* note = new leaving_note;
  return *note;
}
inline std::mutex& leaving_mutex() {
  static std::mutex* m = new std::mutex;
  return *m;
}
}  // namespace detail

/// Notes that rank `rank` leaves through an exception.
inline void note_leaving(int rank) {
  std::lock_guard lock(detail::leaving_mutex());
  leaving_note& note = detail::leaving_state();
  if (note.rank < 0 && !note.together) note.rank = rank;
}

/// Notes that every rank of the job leaves alike, having agreed to (a preemption, after the save): guards
/// destroyed from now on note no leaving, and the exit hook lets MPI finalise.
inline void note_leaving_together() {
  std::lock_guard lock(detail::leaving_mutex());
  leaving_note& note = detail::leaving_state();
  note = leaving_note{};
  note.together = true;
}

/// Keeps the text of an exception passing through sinew (the Trainer's), for the message if the rank leaves.
inline void note_exception(std::string_view what) {
  std::lock_guard lock(detail::leaving_mutex());
  detail::leaving_state().what = std::string(what);
}

/// Forgets a noted leaving: for a program that caught, on every rank alike, an exception that took a trainer
/// or communicator down (a disagreement, say) and goes on together.
inline void clear_leaving() {
  std::lock_guard lock(detail::leaving_mutex());
  detail::leaving_state() = leaving_note{};
}

/// What note_leaving recorded (rank -1 if nothing).
inline leaving_note leaving() {
  std::lock_guard lock(detail::leaving_mutex());
  return detail::leaving_state();
}

/// Notes leaving when it is destroyed by stack unwinding (an exception thrown after it was built and not
/// caught before it goes out of scope). rank < 0 makes it inert (a job of one process).
class unwinding_guard {
 public:
  /// Guards `rank` (rank < 0: inert).
  explicit unwinding_guard(int rank) noexcept : rank_(rank) {}
  unwinding_guard(const unwinding_guard&) = delete;
  unwinding_guard& operator=(const unwinding_guard&) = delete;
  ~unwinding_guard() {
    if (rank_ >= 0 && std::uncaught_exceptions() > uncaught_) {
      try {
        note_leaving(rank_);
      } catch (...) {  // nothing may escape a destructor during unwinding
      }
    }
  }

 private:
  int rank_;
  int uncaught_ = std::uncaught_exceptions();
};

}  // namespace sinew::comm
