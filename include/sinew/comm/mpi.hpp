// sinew/comm/mpi.hpp: the Communicator over MPI, through Boost.MPI.
//
//   sinew::comm::Mpi world;            // MPI_COMM_WORLD, duplicated: sinew's messages never meet the program's
//   world.allreduce_sum(gradients);
//
// The program need not initialise MPI. The first Mpi constructed initialises it through a function-local
// static boost::mpi::environment (thread level MPI_THREAD_FUNNELED: OpenMP threads compute, only the thread
// that trains calls MPI), which every later Mpi shares and which finalises MPI when the program exits. A
// program that initialised MPI itself (its own boost::mpi::environment, or MPI_Init_thread) keeps that: the
// static environment then neither initialises nor finalises, but MPI must provide at least FUNNELED.
//
// Each Mpi duplicates its parent communicator (a collective call: every rank constructs its Mpi objects in the
// same order) and sets MPI_ERRORS_RETURN on the duplicate only, so a failed call becomes a sinew::comm_error
// naming the operation and the peer, while the program's own communicators keep their error handlers.
// Copies of an Mpi share one duplicate. Data moves through the raw MPI handle that Boost.MPI exposes: Boost.MPI
// 1.74 adds nothing for contiguous floats and has no non-blocking collectives (MPI_Iallreduce).
//
// Failing together (comm/failure.hpp): the copies of an Mpi of more than one rank share an unwinding_guard,
// and the environment registers an exit hook that calls MPI_Abort instead of letting MPI_Finalize wait, when
// this rank leaves through an exception: a rank that throws and returns from main ends the whole job.
#pragma once

// MPI's C++ bindings (deleted from MPI-3, absent from Open MPI 5): unused, and without this every program would
// parse them and compile their vtables.
#ifndef OMPI_SKIP_MPICXX
#define OMPI_SKIP_MPICXX 1
#endif
#ifndef MPICH_SKIP_MPICXX
#define MPICH_SKIP_MPICXX 1
#endif
#include <mpi.h>
#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h>  // Open MPI's extensions: ULFM's MPIX_Comm_revoke/shrink in Open MPI 5 (not in 4.1)
#endif
// Fault tolerance (User-Level Failure Mitigation): Open MPI 5 built with it (Debian 13's is), MPICH 4.
#if defined(MPIX_ERR_PROC_FAILED) && defined(MPIX_ERR_REVOKED)
#define SINEW_MPI_HAS_ULFM 1
#else
#define SINEW_MPI_HAS_ULFM 0
#endif

#include <boost/mpi/communicator.hpp>
#include <boost/mpi/environment.hpp>
#include <boost/mpi/exception.hpp>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstddef>
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sinew/comm/communicator_spec.hpp"
#include "sinew/comm/failure.hpp"
#include "sinew/core/affinity.hpp"
#include "sinew/core/error.hpp"

namespace sinew::comm {

namespace detail {

/// Where an MPI call was made, for error messages: "isend to rank 2 (tag 0)", "allreduce_sum of 1001 floats".
struct mpi_site {
  const char* op = "";
  const char* towards = nullptr;  // "to", "from", "from root"; null for a collective without a peer
  int peer = -1, tag = -1;
  std::size_t count = kNoCount;
  static constexpr std::size_t kNoCount = std::size_t(-1);

  std::string describe() const {
    std::string s = op;
    if (towards) s += std::string(" ") + towards + " rank " + std::to_string(peer);
    if (tag >= 0) s += " (tag " + std::to_string(tag) + ")";
    if (count != kNoCount) s += " of " + std::to_string(count) + " floats";
    return s;
  }
};

inline std::string mpi_error_text(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) return "MPI error code " + std::to_string(code);
  return std::string(text, std::size_t(length));
}

/// Whether `code` says that a rank died (ULFM's error classes: the operation needed a dead rank, or a survivor
/// revoked the communicator on seeing one die).
inline bool is_rank_failure(int code) {
#if SINEW_MPI_HAS_ULFM
  int error_class = 0;
  MPI_Error_class(code, &error_class);
  return error_class == MPIX_ERR_PROC_FAILED || error_class == MPIX_ERR_PROC_FAILED_PENDING ||
         error_class == MPIX_ERR_REVOKED;
#else
  (void)code;
  return false;
#endif
}

/// Whether this process has seen a rank of its job die (an MPI call returned ULFM's error for it).
inline std::atomic<bool>& rank_death_seen() {
  static std::atomic<bool> seen{false};
  return seen;
}

[[noreturn]] inline void throw_mpi_error(int code, int self, const mpi_site& site) {
  if (is_rank_failure(code)) {
    rank_death_seen() = true;
    throw rank_lost("comm::Mpi: rank " + std::to_string(self) + ": " + site.describe() +
                    " failed: a rank of the job died (" + mpi_error_text(code) + ")");
  }
  throw comm_error("comm::Mpi: rank " + std::to_string(self) + ": " + site.describe() + " failed: " +
                   mpi_error_text(code));
}

inline void check_mpi(int code, int self, const mpi_site& site) {
  if (code != MPI_SUCCESS) throw_mpi_error(code, self, site);
}

/// MPI counts are ints.
inline int mpi_count(std::size_t n, int self, const mpi_site& site) {
  if (n > std::size_t(INT_MAX))
    throw comm_error("comm::Mpi: rank " + std::to_string(self) + ": " + site.describe() +
                     ": MPI counts are ints, so one call moves at most " + std::to_string(INT_MAX) +
                     " floats (split the span)");
  return int(n);
}

/// Whether Open MPI runs this job with fault tolerance (`mpirun --with-ft ulfm` sets this in every process).
inline bool open_mpi_fault_tolerance_on() {
  const char* enabled = std::getenv("OMPI_MCA_mpi_ft_enable");
  return enabled != nullptr && (std::string_view(enabled) == "1" || std::string_view(enabled) == "true");
}

/// Ends every process of the job with `code`: MPI_Abort, except after a rank died in a job that runs with
/// fault tolerance. There Open MPI 5.0.7's mpirun (Debian 13) sometimes waits forever after every rank has
/// called MPI_Abort and ended (the elastic test whose server dies; the commit that added this counts how
/// often); a rank that exits instead ends the job just as surely, since under fault tolerance every survivor's
/// next operation with the dead rank, or with this one, fails (rank_lost), and mpirun ends when the last
/// process has. A rank that hangs beside a dead one is then not ended; without a death, MPI_Abort ends it.
[[noreturn]] inline void abort_job(MPI_Comm comm, int code) {
  if (rank_death_seen() && open_mpi_fault_tolerance_on()) {
    std::fflush(nullptr);
    std::_Exit(code);
  }
  MPI_Abort(comm, code);
  std::abort();  // MPI_Abort does not return; this keeps [[noreturn]] honest if it does
}

/// The exit hook of comm/failure.hpp: runs before the environment finalises MPI.
inline void abort_if_leaving() {
  const leaving_note note = leaving();
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (note.rank < 0 || !initialized || finalized) return;
  std::fprintf(stderr,
               "sinew: rank %d aborts the job: it leaves through an exception%s%s%s, and the other ranks would "
               "wait for it forever\n",
               note.rank, note.what.empty() ? " (the program's message above names it)" : " (the last the trainer saw: ",
               note.what.c_str(), note.what.empty() ? "" : ")");
  std::fflush(stderr);
  abort_job(MPI_COMM_WORLD, 1);
}

#if SINEW_MPI_HAS_ULFM
}  // namespace detail
}  // namespace sinew::comm
#include <chrono>
#include <thread>
namespace sinew::comm {
namespace detail {
/// After a rank died (Mpi::shrink), registered with on_exit to run before MPI_Finalize: Open MPI 5's finalize can
/// wait forever in its runtime's fence for the dead process (open-mpi/ompi#11404, seen here about one run in
/// four), so a watchdog thread ends this process with its own exit status if finalizing takes over 5 s.
inline void watch_finalize(int status, void*) {
  std::thread([status] {
    std::this_thread::sleep_for(std::chrono::seconds(5));
    std::fprintf(stderr, "sinew: MPI_Finalize has not ended 5 s after the program did; a rank of the job died and "
                         "Open MPI waits for it (open-mpi/ompi#11404): exiting without it, status %d\n", status);
    std::fflush(nullptr);
    std::_Exit(status);
  }).detach();
}
#endif

}  // namespace detail

/// The process's MPI environment, shared by every Mpi (see the file comment). Initialises MPI on first use
/// and registers the exit hook of comm/failure.hpp, which therefore runs before the environment finalises.
inline boost::mpi::environment& mpi_environment() {
  static boost::mpi::environment environment(boost::mpi::threading::funneled, /*abort_on_exception=*/true);
  static const bool hooked = std::atexit(detail::abort_if_leaving) == 0;
  (void)hooked;
  return environment;
}

/// A pending isend, irecv or iallreduce_sum. Destroying one that is still pending waits for it first (its
/// buffer may not be freed under MPI), ignoring errors; call wait() to see them.
class MpiRequest {
 public:
  MpiRequest() = default;
  /// A pending request (Mpi builds them); `check_count` also checks that a receive got the whole span.
  MpiRequest(MPI_Request request, int self, detail::mpi_site site, bool check_count)
      : request_(request), self_(self), site_(site), check_count_(check_count) {}
  /// Moves; `other` is left empty (not pending).
  MpiRequest(MpiRequest&& other) noexcept
      : request_(std::exchange(other.request_, MPI_REQUEST_NULL)),
        self_(other.self_),
        site_(other.site_),
        check_count_(other.check_count_) {}
  /// Waits for this request if it is pending (ignoring errors), then takes `other`'s.
  MpiRequest& operator=(MpiRequest&& other) noexcept {
    if (this != &other) {
      finish_quietly();
      request_ = std::exchange(other.request_, MPI_REQUEST_NULL);
      self_ = other.self_, site_ = other.site_, check_count_ = other.check_count_;
    }
    return *this;
  }
  MpiRequest(const MpiRequest&) = delete;
  MpiRequest& operator=(const MpiRequest&) = delete;
  ~MpiRequest() { finish_quietly(); }

  /// Blocks until the operation completed; throws comm_error if it failed.
  void wait() {
    if (request_ == MPI_REQUEST_NULL) return;
    MPI_Status status;
    const int code = MPI_Wait(&request_, &status);
    finished(code, status);
  }

  /// Whether the operation completed (then as wait()); never blocks.
  bool test() {
    if (request_ == MPI_REQUEST_NULL) return true;
    int done = 0;
    MPI_Status status;
    const int code = MPI_Test(&request_, &done, &status);
    if (code == MPI_SUCCESS && !done) return false;
    finished(code, status);
    return true;
  }

 private:
  void finished(int code, const MPI_Status& status) {
    if (code != MPI_SUCCESS) {
      request_ = MPI_REQUEST_NULL;  // the failed request is not waited for again
      detail::throw_mpi_error(code, self_, site_);
    }
    if (check_count_) {
      int received = 0;
      MPI_Get_count(&status, MPI_FLOAT, &received);
      if (std::size_t(received) != site_.count)
        throw comm_error("comm::Mpi: rank " + std::to_string(self_) + ": " + site_.describe() + " received only " +
                         std::to_string(received) + " floats (the sender's span is shorter than the receiver's)");
    }
  }

  void finish_quietly() noexcept {
    if (request_ != MPI_REQUEST_NULL) MPI_Wait(&request_, MPI_STATUS_IGNORE);
  }

  MPI_Request request_ = MPI_REQUEST_NULL;
  int self_ = -1;
  detail::mpi_site site_;
  bool check_count_ = false;
};

static_assert(req::comm_request<MpiRequest>);

/// Memory that every process of one host can read and write: an MPI-3 shared window (MPI_Win_allocate_shared
/// over the host's MPI_COMM_TYPE_SHARED communicator), held in one passive epoch (MPI_Win_lock_all) for its
/// whole life, so that loads, stores and atomics on it need no further MPI call. Mpi::shared_window builds one.
/// Move-only. Destroying it frees the window, which is collective: every rank destroys its own in the same
/// order; while an exception unwinds (the job is ending, comm/failure.hpp) it is left to MPI_Abort instead,
/// since a free that waits for the other ranks could then hang.
class MpiSharedWindow {
 public:
  MpiSharedWindow() = default;
  /// Takes `window` (locked) and the base of each rank's part, by rank.
  MpiSharedWindow(MPI_Win window, std::vector<std::byte*> bases) : window_(window), bases_(std::move(bases)) {}
  /// Moves; `other` is left empty.
  MpiSharedWindow(MpiSharedWindow&& other) noexcept
      : window_(std::exchange(other.window_, MPI_WIN_NULL)), bases_(std::move(other.bases_)) {}
  /// Frees this window (collective, see the class comment), then takes `other`'s.
  MpiSharedWindow& operator=(MpiSharedWindow&& other) noexcept {
    if (this != &other) {
      release();
      window_ = std::exchange(other.window_, MPI_WIN_NULL);
      bases_ = std::move(other.bases_);
    }
    return *this;
  }
  MpiSharedWindow(const MpiSharedWindow&) = delete;
  MpiSharedWindow& operator=(const MpiSharedWindow&) = delete;
  ~MpiSharedWindow() { release(); }

  /// Where rank `rank`'s part begins in this process's address space (64-byte aligned); null when empty.
  std::byte* base(int rank) const noexcept {
    return std::size_t(rank) < bases_.size() ? bases_[std::size_t(rank)] : nullptr;
  }
  /// Whether a window is held.
  explicit operator bool() const noexcept { return window_ != MPI_WIN_NULL; }

 private:
  void release() noexcept {
    if (window_ == MPI_WIN_NULL) return;
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized && std::uncaught_exceptions() == 0) {
      MPI_Win_unlock_all(window_);
      MPI_Win_free(&window_);
    }
    window_ = MPI_WIN_NULL;
    bases_.clear();
  }

  MPI_Win window_ = MPI_WIN_NULL;
  std::vector<std::byte*> bases_;
};

/// The Communicator (comm/communicator_spec.hpp) over MPI, through Boost.MPI: float messages, sums and
/// broadcasts, each failure a comm_error naming the call, the peer and the rank.
class Mpi {
 public:
  /// A pending isend, irecv or iallreduce_sum: wait() or test() it.
  using request = MpiRequest;

  /// All processes of the job (a duplicate of MPI_COMM_WORLD). Collective.
  Mpi() : Mpi(MPI_COMM_WORLD) {}

  /// The processes of `parent` (duplicated). Collective over `parent`.
  explicit Mpi(MPI_Comm parent) : Mpi(parent, -1) {}

  /// This process's rank, 0 .. size() - 1.
  int rank() const noexcept { return rank_; }
  /// The number of hosts the processes run on: groups that can share memory (MPI_COMM_TYPE_SHARED), as
  /// mpirun's hostfile places them. The ring all-reduce sizes its messages by it (comm/ring_allreduce.hpp).
  int hosts() const noexcept { return topology_.hosts; }
  /// The processes on this host that the launcher gave the same CPU set as this one, and this one's place among
  /// them (by rank): how they split the set's cores (core/affinity.hpp, Trainer). Found once, at construction.
  HostShare host_share() const noexcept { return topology_.share; }
  /// The number of processes.
  int size() const noexcept { return size_; }

  /// The duplicated communicator, for calls sinew does not wrap.
  const boost::mpi::communicator& boost_communicator() const noexcept { return comm_; }
  /// The duplicated communicator as MPI's handle, for calls sinew does not wrap.
  MPI_Comm native() const noexcept { return MPI_Comm(comm_); }

  /// Sends `data` to rank `peer` with `tag`; returns when the buffer may be reused.
  void send(std::span<const float> data, int peer, int tag) {
    const detail::mpi_site site{"send", "to", peer, tag, data.size()};
    detail::check_mpi(MPI_Send(data.data(), count(data.size(), site), MPI_FLOAT, peer, tag, native()), rank_, site);
  }

  /// Receives exactly data.size() floats from rank `peer` with `tag`.
  void recv(std::span<float> data, int peer, int tag) {
    request r = irecv(data, peer, tag);
    r.wait();
  }

  /// Starts sending `data`, which must stay alive and unchanged until the request completes.
  request isend(std::span<const float> data, int peer, int tag) {
    const detail::mpi_site site{"isend", "to", peer, tag, data.size()};
    MPI_Request r = MPI_REQUEST_NULL;
    detail::check_mpi(MPI_Isend(data.data(), count(data.size(), site), MPI_FLOAT, peer, tag, native(), &r), rank_,
                      site);
    return request(r, rank_, site, false);
  }

  /// Starts receiving data.size() floats into `data`, which must stay alive until the request completes.
  request irecv(std::span<float> data, int peer, int tag) {
    const detail::mpi_site site{"irecv", "from", peer, tag, data.size()};
    MPI_Request r = MPI_REQUEST_NULL;
    detail::check_mpi(MPI_Irecv(data.data(), count(data.size(), site), MPI_FLOAT, peer, tag, native(), &r), rank_,
                      site);
    return request(r, rank_, site, true);
  }

  /// Replaces `data` on every rank by its element-wise sum over the ranks. Collective.
  void allreduce_sum(std::span<float> data) {
    const detail::mpi_site site{"allreduce_sum", nullptr, -1, -1, data.size()};
    if (data.empty()) return;
    detail::check_mpi(
        MPI_Allreduce(MPI_IN_PLACE, data.data(), count(data.size(), site), MPI_FLOAT, MPI_SUM, native()), rank_,
        site);
  }

  /// Starts allreduce_sum(data); `data` holds the sum once the request completes. Collective.
  request iallreduce_sum(std::span<float> data) {
    const detail::mpi_site site{"iallreduce_sum", nullptr, -1, -1, data.size()};
    if (data.empty()) return {};
    MPI_Request r = MPI_REQUEST_NULL;
    detail::check_mpi(
        MPI_Iallreduce(MPI_IN_PLACE, data.data(), count(data.size(), site), MPI_FLOAT, MPI_SUM, native(), &r),
        rank_, site);
    return request(r, rank_, site, false);
  }

  /// Copies rank `root`'s `data` into every rank's. Collective.
  void broadcast(std::span<float> data, int root) {
    const detail::mpi_site site{"broadcast", "from root", root, -1, data.size()};
    if (data.empty()) return;
    detail::check_mpi(MPI_Bcast(data.data(), count(data.size(), site), MPI_FLOAT, root, native()), rank_, site);
  }

  /// Collective over every rank, which must share one host (hosts() == 1, else comm_error): `bytes` of memory
  /// per rank, zeroed, that every rank can read and write through base(rank) (comm/communicator_spec.hpp).
  /// The ring all-reduce sums through it without messages (comm/ring_allreduce.hpp).
  MpiSharedWindow shared_window(std::size_t bytes) {
    if (topology_.hosts != 1)
      throw comm_error("comm::Mpi: rank " + std::to_string(rank_) + ": shared_window needs every rank on one host, "
                       "but the ranks run on " + std::to_string(topology_.hosts) +
                       " hosts (use messages across hosts)");
    const detail::mpi_site site{"shared_window (MPI_Win_allocate_shared)"};
    MPI_Comm node = MPI_COMM_NULL;
    detail::check_mpi(MPI_Comm_split_type(native(), MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node), rank_, site);
    // Each rank's part in its own pages (near its core, where the OS places first-touched pages), 64-byte
    // aligned: the part begins with cache lines of flags that must not share a line with another rank's.
    MPI_Info info = MPI_INFO_NULL;
    MPI_Info_create(&info);
    MPI_Info_set(info, "alloc_shared_noncontig", "true");
    void* mine = nullptr;
    MPI_Win window = MPI_WIN_NULL;
    // Open MPI aligns the parts after the first to 8 bytes only: 64 bytes more, and each base rounded up (the
    // same place in every process, whose mappings are page-aligned).
    const std::size_t rounded = std::max<std::size_t>(64, (bytes + 63) / 64 * 64);
    const int allocated = MPI_Win_allocate_shared(MPI_Aint(rounded + 64), 1, info, node, &mine, &window);
    MPI_Info_free(&info);
    if (allocated != MPI_SUCCESS) MPI_Comm_free(&node);
    detail::check_mpi(allocated, rank_, site);
    std::vector<std::byte*> bases(std::size_t(size_), nullptr);
    for (int r = 0; r < size_; ++r) {
      MPI_Aint length = 0;
      int unit = 1;
      void* base = nullptr;
      MPI_Win_shared_query(window, r, &length, &unit, &base);
      bases[std::size_t(r)] = aligned_64(base);
    }
    std::memset(aligned_64(mine), 0, rounded);
    MPI_Win_lock_all(MPI_MODE_NOCHECK, window);
    const int met = MPI_Barrier(node);  // no rank reads another's flags before they are zeroed
    MPI_Comm_free(&node);
    MpiSharedWindow result(window, std::move(bases));
    detail::check_mpi(met, rank_, site);
    return result;
  }

  /// Collective: the ranks of this one's host (`local`, one host, so with a shared window) and the ranks at this
  /// one's place on every host (`across`, one per host), each a communicator of its own, for the hierarchical
  /// all-reduce (comm/ring_allreduce.hpp). ranks_per_host > 0 takes every ranks_per_host consecutive ranks as one
  /// host instead, to try the hierarchy on one machine. Every host must hold as many ranks (else comm_error).
  HostSplit<Mpi> host_split(int ranks_per_host = 0) {
    const detail::mpi_site site{"host_split (MPI_Comm_split)"};
    MPI_Comm local = MPI_COMM_NULL, across = MPI_COMM_NULL;
    int code = ranks_per_host > 0
                   ? MPI_Comm_split(native(), rank_ / ranks_per_host, rank_, &local)
                   : MPI_Comm_split_type(native(), MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &local);
    detail::check_mpi(code, rank_, site);
    int place = 0, count = 0;
    MPI_Comm_rank(local, &place);
    MPI_Comm_size(local, &count);
    int extremes[2] = {-count, count};  // the fewest (negated) and the most ranks on a host
    code = MPI_Allreduce(MPI_IN_PLACE, extremes, 2, MPI_INT, MPI_MAX, native());
    if (code == MPI_SUCCESS) code = MPI_Comm_split(native(), place, rank_, &across);
    const auto free_both = [&] {
      if (local != MPI_COMM_NULL) MPI_Comm_free(&local);
      if (across != MPI_COMM_NULL) MPI_Comm_free(&across);
    };
    if (code != MPI_SUCCESS) free_both();
    detail::check_mpi(code, rank_, site);
    if (-extremes[0] != extremes[1]) {
      free_both();
      throw comm_error("comm::Mpi: rank " + std::to_string(rank_) + ": host_split needs as many ranks on every host, "
                       "but the hosts hold " + std::to_string(-extremes[0]) + " to " + std::to_string(extremes[1]) +
                       " (place them evenly, e.g. mpirun --map-by ppr:K:node, or use RingTransport::messages)");
    }
    // Each keeps this rank's number in the world for its guard: a rank that leaves is named as the job knows it.
    HostSplit<Mpi> split{Mpi(local, rank_), Mpi(across, rank_)};
    free_both();
    int spread = split.local.hosts();  // more than 1 where ranks_per_host groups ranks of several real hosts
    detail::check_mpi(MPI_Allreduce(MPI_IN_PLACE, &spread, 1, MPI_INT, MPI_MAX, native()), rank_, site);
    if (spread > 1)
      throw comm_error("comm::Mpi: rank " + std::to_string(rank_) + ": host_split(" + std::to_string(ranks_per_host) +
                       ") groups ranks of " + std::to_string(spread) + " hosts as one, which share no memory (use "
                       "0, the launcher's hosts, or a divisor of the ranks each host runs)");
    return split;
  }

  /// Empty when this MPI can go on after a rank dies (ULFM: Open MPI 5 with `mpirun --with-ft ulfm`), else the
  /// sentence saying why not, for a strategy's `elastic` option to refuse with at start-up.
  static std::string fault_tolerance_missing() {
    mpi_environment();
    char version[MPI_MAX_LIBRARY_VERSION_STRING] = {};
    int length = 0;
    MPI_Get_library_version(version, &length);
    std::string library(version, std::size_t(std::max(0, length)));
    library = library.substr(0, library.find_first_of(",\n"));
#if SINEW_MPI_HAS_ULFM
    // Open MPI's runtime kills the whole job when a process dies unless mpirun was given --with-ft ulfm, which
    // sets this parameter in every process's environment.
    const bool open_mpi = library.find("Open MPI") != std::string::npos;
    if (open_mpi && !detail::open_mpi_fault_tolerance_on())
      return "Open MPI's fault tolerance is off in this job (" + library + "): start it with `mpirun --with-ft ulfm`";
    return {};
#else
    return "this MPI (" + library + ") has no fault tolerance (ULFM: MPIX_Comm_shrink); training on after a rank "
           "dies needs Open MPI 5 (Debian 13) started with `mpirun --with-ft ulfm`";
#endif
  }

  /// Collective over the ranks still alive, after one of this communicator's operations threw rank_lost:
  /// revokes this communicator (so that every survivor's pending operation on it fails too, instead of
  /// waiting for a peer that waits elsewhere) and returns a new one of the survivors, renumbered from 0 in
  /// their order; `lost` gets the dead ranks' numbers in this one. Throws comm_error without fault tolerance.
  Mpi shrink(std::vector<int>& lost) {
#if SINEW_MPI_HAS_ULFM
    const detail::mpi_site site{"shrink (MPIX_Comm_shrink)"};
    MPIX_Comm_revoke(native());
    MPI_Comm smaller = MPI_COMM_NULL;
    detail::check_mpi(MPIX_Comm_shrink(native(), &smaller), rank_, site);
    MPI_Group failed = MPI_GROUP_NULL, all = MPI_GROUP_NULL;
    lost.clear();
    if (MPIX_Comm_get_failed(native(), &failed) == MPI_SUCCESS && MPI_Comm_group(native(), &all) == MPI_SUCCESS) {
      int count = 0;
      MPI_Group_size(failed, &count);
      std::vector<int> theirs(static_cast<std::size_t>(count));
      for (int i = 0; i < count; ++i) theirs[std::size_t(i)] = i;
      lost.resize(std::size_t(count));
      MPI_Group_translate_ranks(failed, count, theirs.data(), all, lost.data());
    }
    if (failed != MPI_GROUP_NULL) MPI_Group_free(&failed);
    if (all != MPI_GROUP_NULL) MPI_Group_free(&all);
    Mpi survivors(smaller, -1);
    MPI_Comm_free(&smaller);
    static const bool watched = on_exit(detail::watch_finalize, nullptr) == 0;
    (void)watched;
    return survivors;
#else
    (void)lost;
    throw comm_error("comm::Mpi: rank " + std::to_string(rank_) + ": shrink: " + fault_tolerance_missing());
#endif
  }

  /// Returns once every rank has called it. Collective.
  void barrier() {
    detail::check_mpi(MPI_Barrier(native()), rank_, {"barrier"});
  }

  /// The sender of a message with `tag` that can be received now, or -1 if none has come; never blocks.
  int iprobe_any(int tag) {
    int flag = 0;
    MPI_Status status;
    detail::check_mpi(MPI_Iprobe(MPI_ANY_SOURCE, tag, native(), &flag, &status), rank_,
                      {"iprobe_any", nullptr, -1, tag});
    return flag ? status.MPI_SOURCE : -1;
  }

  /// Blocks until a message with `tag` from any rank can be received; returns the sender, whose message is then
  /// taken with recv(data, sender, tag).
  int probe_any(int tag) {
    MPI_Status status;
    detail::check_mpi(MPI_Probe(MPI_ANY_SOURCE, tag, native(), &status), rank_, {"probe_any", nullptr, -1, tag});
    return status.MPI_SOURCE;
  }

  /// Prints "sinew: rank R aborts the job: <message>" and ends every process of the job with `code`.
  [[noreturn]] void abort(int code, std::string_view message) {
    std::fprintf(stderr, "sinew: rank %d aborts the job: %.*s\n", rank_, int(message.size()), message.data());
    std::fflush(stderr);
    detail::abort_job(native(), code);
  }

 private:
  // The processes of `parent`; a rank that leaves through an exception is noted as `world_rank` (its own rank
  // when negative).
  Mpi(MPI_Comm parent, int world_rank)
      : comm_(duplicate(parent)),
        rank_(comm_.rank()),
        size_(comm_.size()),
        topology_(find_topology(MPI_Comm(comm_), rank_, size_)),
        guard_(std::make_shared<unwinding_guard>(size_ > 1 ? (world_rank < 0 ? rank_ : world_rank) : -1)) {}

  static boost::mpi::communicator duplicate(MPI_Comm parent) {
    mpi_environment();
    int provided = MPI_THREAD_SINGLE;
    MPI_Query_thread(&provided);
    if (provided < MPI_THREAD_FUNNELED)
      throw comm_error(
          "comm::Mpi: MPI was initialised with thread level MPI_THREAD_SINGLE, but sinew calls MPI while OpenMP "
          "threads exist and needs at least MPI_THREAD_FUNNELED (initialise with MPI_Init_thread, or let sinew "
          "initialise MPI)");
    try {
      boost::mpi::communicator comm(parent, boost::mpi::comm_duplicate);
      MPI_Comm_set_errhandler(MPI_Comm(comm), MPI_ERRORS_RETURN);
      return comm;
    } catch (const boost::mpi::exception& e) {
      throw comm_error(std::string("comm::Mpi: duplicating the parent communicator failed: ") + e.what());
    }
  }

  static std::byte* aligned_64(void* p) noexcept {
    const auto address = reinterpret_cast<std::uintptr_t>(p);
    return static_cast<std::byte*>(p) + ((64 - address % 64) % 64);
  }

  struct topology {
    int hosts = 1;
    HostShare share;
  };

  // Collective: how many shared-memory groups `comm` spans (each counts its lowest rank once), and which ranks of
  // this one's group have the same CPU set (the launcher's binding) as this one.
  static topology find_topology(MPI_Comm comm, int rank, int size) {
    if (size == 1) return {};
    MPI_Comm node = MPI_COMM_NULL;
    detail::check_mpi(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node), rank,
                      {"hosts (MPI_Comm_split_type)"});
    int node_rank = 0, node_size = 1;
    MPI_Comm_rank(node, &node_rank);
    MPI_Comm_size(node, &node_size);
    const std::vector<unsigned char> mine = cpu_set_bytes();
    std::vector<unsigned char> all(mine.size() * std::size_t(node_size));
    const int gathered = MPI_Allgather(mine.data(), int(mine.size()), MPI_BYTE, all.data(), int(mine.size()),
                                       MPI_BYTE, node);
    MPI_Comm_free(&node);
    detail::check_mpi(gathered, rank, {"host_share (MPI_Allgather of CPU sets)"});
    topology t;
    t.share.count = 0;
    for (int r = 0; r < node_size; ++r) {
      if (!std::equal(mine.begin(), mine.end(), all.begin() + std::ptrdiff_t(r * mine.size()))) continue;
      if (r < node_rank) ++t.share.index;
      ++t.share.count;
    }
    int leaders = node_rank == 0 ? 1 : 0;
    detail::check_mpi(MPI_Allreduce(MPI_IN_PLACE, &leaders, 1, MPI_INT, MPI_SUM, comm), rank,
                      {"hosts (MPI_Allreduce)"});
    t.hosts = leaders;
    return t;
  }

  int count(std::size_t n, const detail::mpi_site& site) const { return detail::mpi_count(n, rank_, site); }

  boost::mpi::communicator comm_;
  int rank_ = 0, size_ = 1;
  topology topology_;
  std::shared_ptr<unwinding_guard> guard_;  // shared by the copies: the last one destroyed decides
};

static_assert(CommunicatorPolicy<Mpi> && req::has_probe_any<Mpi> && req::has_hosts<Mpi> &&
              req::has_shared_window<Mpi> && req::has_host_split<Mpi> && req::has_shrink<Mpi>);

}  // namespace sinew::comm
