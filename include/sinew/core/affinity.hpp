// sinew/core/affinity.hpp: how the ranks that share a host split its cores, and binding threads to them.
//
// Oversubscription is the most common way a CPU data-parallel job loses most of its speed: two ranks on one host
// that each start as many compute threads as the host has cores run twice as many threads as there are cores
// (Horovod and DDP users report a run falling from 27.8 to 9.2 images/s that way). sinew's default avoids it:
//
//   1. The communicator finds the ranks on this host that the launcher gave the same CPU set
//      (comm::Mpi::host_share(): MPI_COMM_TYPE_SHARED, then the affinity masks compared).
//   2. plan_cores() gives each of them a contiguous, disjoint share of that set; `reserve` cores of the share are
//      left to the loader's workers and the communication thread when asked (CoreSplit::reserve).
//   3. The backend starts one compute thread per core of the share and, when ranks share the set, binds each to
//      its core (CoreSplit::binding).
//
// A launcher that already bound each rank to its own cores (mpirun --bind-to core) gives every rank a different
// set, so each rank keeps its own set whole. More ranks than cores cannot be helped: each rank gets one thread,
// left unbound so that the OS can balance them, and CorePlan::describe() says the host is oversubscribed.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <span>
#include <string>
#include <thread>
#include <vector>

#if defined(__linux__)
#include <sched.h>
#include <unistd.h>
#endif

namespace sinew {

/// Which of the ranks that share one CPU set this process is: index 0 .. count - 1 (0 of 1 alone).
struct HostShare {
  int index = 0;  ///< this rank's place among them (by rank)
  int count = 1;  ///< how many ranks share the set
};

/// When compute threads are bound to their cores.
enum class Binding {
  when_shared,  ///< when several ranks share the host's CPU set (the default)
  always,       ///< also for a single rank
  never,        ///< leave the threads where the OS puts them (the share still sets their number)
};

/// How a rank's share of the host is used (TrainerOptions::cores).
struct CoreSplit {
  /// cores of the share left free for loader workers and communication; at least one core always computes
  int reserve = 0;
  /// when compute threads are bound
  Binding binding = Binding::when_shared;
};

/// This rank's cores: which compute, which are left free, and whether compute threads are bound.
struct CorePlan {
  std::vector<int> compute;   ///< CPU ids the compute threads run on, one thread each
  std::vector<int> reserved;  ///< CPU ids left for loader workers and communication
  HostShare share;            ///< the ranks that split the set
  bool oversubscribed = false;  ///< more ranks than cores: cores are shared between ranks
  bool bind = false;            ///< compute threads are bound, one per core of `compute`
  /// threads asked for (TrainerOptions::threads, else OMP_NUM_THREADS); 0: one per core of `compute`
  int requested = 0;
  /// CPUs in the set the process was launched with, and online on the host (0: not known). Fewer in the set
  /// than on the host: the launcher bound the process (mpirun --bind-to core, taskset, a container's cpuset).
  /// @{
  int launch_set = 0, host_cpus = 0;
  /// @}

  /// The number of compute threads.
  int threads() const noexcept { return requested > 0 ? requested : std::max<int>(1, int(compute.size())); }

  /// One line for logs and benchmark records: which cores compute, with how many threads, and who bound them,
  /// e.g. "cores 1 (1 thread, bound by sinew: rank 1 of the 2 ranks sharing this process's CPU set)" or
  /// "cores 0 (1 thread; the launcher bound this process to 1 of the host's 2 CPUs, and it is the only rank on
  /// them: sinew binds nothing more)".
  std::string describe() const {
    auto list = [](const std::vector<int>& cpus) {
      std::string s;
      for (std::size_t i = 0; i < cpus.size(); ++i) {
        if (i > 0) s += ',';
        s += std::to_string(cpus[i]);
      }
      return s.empty() ? std::string("none") : s;
    };
    const std::string sharing = share.count > 1 ? "rank " + std::to_string(share.index) + " of the " +
                                                      std::to_string(share.count) + " ranks sharing this process's CPU set"
                                                : "the only rank on this process's CPU set";
    const bool confined = launch_set > 0 && host_cpus > launch_set;
    std::string s = "cores " + list(compute) + " (" + std::to_string(threads()) + (threads() == 1 ? " thread" : " threads");
    if (confined)
      s += "; the launcher bound this process to " + std::to_string(launch_set) + " of the host's " +
           std::to_string(host_cpus) + " CPUs";
    if (bind)
      s += (confined ? "; " : ", ") + std::string("bound by sinew, one thread a core: ") + sharing + ")";
    else if (share.count > 1)
      s += (confined ? "; " : ", ") + std::string("not bound by sinew: ") + sharing + ")";
    else
      s += (confined ? ", and it is " : ", not bound, the OS places them: it is ") + sharing +
           (confined ? ": sinew binds nothing more)" : ")");
    if (!reserved.empty()) s += ", cores " + list(reserved) + " left for loader and communication";
    if (oversubscribed) s += "; oversubscribed: more ranks than cores";
    if (requested > int(compute.size()) && !compute.empty()) s += "; more threads than cores, as asked";
    return s;
  }
};

/// The CPU ids the calling thread may run on (its affinity mask), ascending; without an affinity call on this
/// platform, 0 .. hardware_concurrency - 1.
inline std::vector<int> allowed_cpus() {
  std::vector<int> cpus;
#if defined(__linux__)
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0)
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &set)) cpus.push_back(c);
#endif
  if (cpus.empty())
    for (unsigned c = 0; c < std::max(1u, std::thread::hardware_concurrency()); ++c) cpus.push_back(int(c));
  return cpus;
}

/// The CPU set the process was launched with: the calling thread's mask at the first call (made by the first
/// communicator or trainer, before sinew binds anything), kept for the process's life, so that a trainer built
/// after another one bound this thread splits the same set the same way.
inline const std::vector<int>& launch_cpus() {
  static const std::vector<int> cpus = allowed_cpus();
  return cpus;
}

/// Splits `cpus` (the set `share.count` ranks share) into rank `share.index`'s plan: contiguous, disjoint
/// shares as equal as the count allows; `split.reserve` cores of the share left free (never all of it).
inline CorePlan plan_cores(std::span<const int> cpus, HostShare share, CoreSplit split = {}) {
  CorePlan plan;
  plan.share = share;
  const int n = int(cpus.size()), count = std::max(1, share.count), index = std::clamp(share.index, 0, count - 1);
  std::vector<int> mine;
  if (n == 0) {
    mine = {};
  } else if (count > n) {
    plan.oversubscribed = true;
    mine = {cpus[std::size_t(index % n)]};
  } else {
    const int base = n / count, extra = n % count;
    const int begin = index * base + std::min(index, extra), size = base + (index < extra ? 1 : 0);
    mine.assign(cpus.begin() + begin, cpus.begin() + begin + size);
  }
  const int reserve = std::clamp(split.reserve, 0, std::max(0, int(mine.size()) - 1));
  plan.compute.assign(mine.begin(), mine.end() - reserve);
  plan.reserved.assign(mine.end() - reserve, mine.end());
  plan.bind = !plan.compute.empty() && !plan.oversubscribed && (split.binding == Binding::always ||
                                        (split.binding == Binding::when_shared && count > 1));
  return plan;
}

/// Binds the calling thread to `cpus` (one CPU pins it; several confine it). False where the OS refused or the
/// platform has no affinity call.
inline bool bind_this_thread(std::span<const int> cpus) {
#if defined(__linux__)
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c : cpus)
    if (c >= 0 && c < CPU_SETSIZE) CPU_SET(c, &set);
  return sched_setaffinity(0, sizeof set, &set) == 0;
#else
  (void)cpus;
  return false;
#endif
}

/// This rank's plan on its host, the ranks that share the launch set split by `split` (plan_cores), with the
/// threads asked for (`threads`, or OMP_NUM_THREADS when it is 0). Where the plan binds, the calling thread is
/// confined to the rank's share (its compute and reserved cores), so that the threads it starts later (loader
/// workers, communication) stay off the other ranks' cores.
inline CorePlan plan_and_confine(HostShare share, CoreSplit split, int threads) {
  CorePlan plan = plan_cores(launch_cpus(), share, split);
  plan.requested = threads;
  plan.launch_set = int(launch_cpus().size());
#if defined(__linux__)
  plan.host_cpus = int(std::max(0L, ::sysconf(_SC_NPROCESSORS_ONLN)));
#endif
  if (const char* env = std::getenv("OMP_NUM_THREADS"); plan.requested <= 0 && env != nullptr)
    plan.requested = std::max(0, std::atoi(env));
  if (plan.bind) {
    std::vector<int> mine = plan.compute;
    mine.insert(mine.end(), plan.reserved.begin(), plan.reserved.end());
    bind_this_thread(mine);
  }
  return plan;
}

/// The CPU set this process was launched with, as bytes, for comparing sets across ranks (comm::Mpi::host_share()).
inline std::vector<unsigned char> cpu_set_bytes() {
  std::vector<unsigned char> bytes(128, 0);  // room for 1024 CPUs, as cpu_set_t has
  for (int c : launch_cpus())
    if (c < 1024) bytes[std::size_t(c / 8)] |= static_cast<unsigned char>(1u << (c % 8));
  return bytes;
}

}  // namespace sinew
