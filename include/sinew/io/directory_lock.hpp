// sinew/io/directory_lock.hpp: one writer per checkpoint directory.
//
// Two runs saving into one directory (a run thought killed but still running, and its resume) would each
// replace the other's manifest and remove the other's files as "not listed". So a process that saves into a
// directory or resumes from it first takes a lock there, one per rank: `.sinew-lock-rank<r>`, an advisory
// flock(2) on a file that names its holder (host, pid, the time it was taken, the rank). A second process that
// asks for a held lock is refused with a sentence naming the holder. The kernel drops a flock when its process
// ends, however it ends (kill -9 included), so a lock file left by a dead run is not held: the next run takes it
// over and says whose it was (a run that ended normally empties its lock files, so only a killed one is named).
// A process keeps its locks until it exits, or until release_directory(dir): the trainers of one process share
// them (a test that saves with one trainer and resumes with the next, a program that rebuilds its trainer),
// since one process is one run.
//
// flock is honoured by local file systems and by NFS (Linux emulates it with the server's byte-range locks);
// where a shared file system does not honour it, the lock file still names the last holder.
#pragma once

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <map>
#include <mutex>
#include <string>
#include <system_error>

#include "sinew/core/error.hpp"

namespace sinew::io {

/// The name of rank `rank`'s lock file in a checkpoint directory.
inline std::string lock_file_name(int rank) { return ".sinew-lock-rank" + std::to_string(rank); }

namespace detail {

/// Ends a lock this process holds: empties the file (a run that ended normally leaves no holder named) and
/// closes it, which drops the flock.
inline void end_lock(int fd) {
  [[maybe_unused]] const int rc = ::ftruncate(fd, 0);  // a lock file left naming us reads as stale: harmless
  ::close(fd);
}

/// The locks this process holds: lock file path -> open descriptor (holding the flock). Emptied at exit.
struct HeldLocks {
  std::mutex mutex;
  std::map<std::filesystem::path, int> fds;
  HeldLocks() = default;
  HeldLocks(const HeldLocks&) = delete;
  HeldLocks& operator=(const HeldLocks&) = delete;
  ~HeldLocks() {
    for (const auto& [file, fd] : fds) end_lock(fd);
  }
};
inline HeldLocks& held_locks() {
  static HeldLocks held;
  return held;
}

/// The text a lock file holds: its holder, as "host H pid P since T rank R".
inline std::string holder_text(int rank) {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) std::strcpy(host, "?");
  char since[32] = "?";
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  if (::gmtime_r(&now, &utc)) std::strftime(since, sizeof since, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return "host " + std::string(host) + " pid " + std::to_string(::getpid()) + " since " + since + " rank " +
         std::to_string(rank) + "\n";
}

/// What the lock file open on `fd` says of its holder (its first line), or empty.
inline std::string read_holder(int fd) {
  char buf[512] = {};
  const ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
  if (n <= 0) return {};
  std::string text(buf, std::size_t(n));
  if (const auto end = text.find('\n'); end != std::string::npos) text.resize(end);
  return text;
}

}  // namespace detail

/// Takes rank `rank`'s lock in checkpoint directory `dir` (which must exist) for this process, if it does not
/// hold it already. Throws sinew::error naming the holder when another process holds it. Returns a note when it
/// took over a lock file whose process had ended (empty otherwise).
inline std::string lock_directory(const std::filesystem::path& dir, int rank) {
  std::error_code ec;
  std::filesystem::path file = std::filesystem::weakly_canonical(dir, ec);
  file = (ec ? dir : file) / lock_file_name(rank);
  detail::HeldLocks& held = detail::held_locks();
  const std::lock_guard guard(held.mutex);
  if (const auto it = held.fds.find(file); it != held.fds.end()) {
    // Still the same file (not one made anew after the directory was removed and created again)?
    struct stat now {}, ours {};
    if (::stat(file.c_str(), &now) == 0 && ::fstat(it->second, &ours) == 0 && now.st_dev == ours.st_dev &&
        now.st_ino == ours.st_ino)
      return {};
    ::close(it->second);
    held.fds.erase(it);
  }
  const int fd = ::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0)
    throw error("checkpoint: cannot open the lock file " + file.string() + ": " + std::strerror(errno));
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int saved = errno;
    const std::string holder = detail::read_holder(fd);
    ::close(fd);
    if (saved == EWOULDBLOCK)
      throw error("checkpoint: the directory " + dir.string() + " is in use by another run (" +
                  (holder.empty() ? std::string("its lock file is empty") : holder) + ", lock " + file.string() +
                  "); let that run end or stop it, or save to another directory");
    throw error("checkpoint: cannot lock " + file.string() + ": " + std::strerror(saved));
  }
  const std::string before = detail::read_holder(fd);
  const std::string mine = detail::holder_text(rank);
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, mine.data(), mine.size(), 0) != ssize_t(mine.size())) {
    const int saved = errno;
    ::close(fd);
    throw error("checkpoint: cannot write the lock file " + file.string() + ": " + std::strerror(saved) +
                " (disk full?)");
  }
  held.fds.emplace(file, fd);
  if (before.empty()) return {};
  return "checkpoint: took over the lock of " + dir.string() + " from a run that has ended (" + before + ")";
}

/// Gives up this process's locks in `dir` (every rank's it holds), so that another process may save there.
/// The lock files stay, unheld.
inline void release_directory(const std::filesystem::path& dir) {
  std::error_code ec;
  std::filesystem::path canonical = std::filesystem::weakly_canonical(dir, ec);
  if (ec) canonical = dir;
  detail::HeldLocks& held = detail::held_locks();
  const std::lock_guard guard(held.mutex);
  for (auto it = held.fds.begin(); it != held.fds.end();) {
    if (it->first.parent_path() == canonical) {
      detail::end_lock(it->second);
      it = held.fds.erase(it);
    } else {
      ++it;
    }
  }
}

}  // namespace sinew::io
