// sinew/core/error.hpp: the exceptions sinew throws.
//
// Every runtime error names the thing that is wrong and, where there is one, the fix:
//   cifar: data_batch_3.bin is 30729999 bytes, expected a multiple of 3073 (truncated download?)
// Callers catch sinew::error for everything, or one of the kinds below to react to a cause.
#pragma once

#include <stdexcept>
#include <string>

namespace sinew {

/// Base of every exception sinew throws.
class error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A data file is missing, truncated, corrupt, or holds values out of range.
class data_error : public error {
 public:
  using error::error;
};

/// A runtime size or shape does not match what the compile-time configuration expects.
class shape_error : public error {
 public:
  using error::error;
};

/// Training diverged (NaN or infinite loss) or an option is out of range.
class training_error : public error {
 public:
  using error::error;
};

/// A backend library (oneDNN, Eigen) refused a configuration.
class backend_error : public error {
 public:
  using error::error;
};

/// Ranks disagree, a peer died, or the communication layer failed.
class comm_error : public error {
 public:
  using error::error;
};

/// A rank of the job died, seen by an operation that needed it (comm::Mpi under Open MPI 5's fault tolerance,
/// ULFM: `mpirun --with-ft ulfm`). Every survivor gets one from its next operation on that communicator, so a
/// strategy that goes on without the dead rank (options.elastic) shrinks there; otherwise it ends the job as any
/// comm_error does.
class rank_lost : public comm_error {
 public:
  using comm_error::comm_error;
};

/// Training stopped on a preemption signal after every rank saved the run (Trainer::set_preemption): not a
/// failure. Every rank throws it alike, so it ends no job on its way out; main returns exit_status().
class preempted : public error {
 public:
  /// EX_TEMPFAIL of <sysexits.h>: "try again later", the status a requeued job's script can test for.
  static constexpr int kExitStatus = 75;
  using error::error;
  /// What main returns: kExitStatus.
  int exit_status() const noexcept { return kExitStatus; }
};

}  // namespace sinew
