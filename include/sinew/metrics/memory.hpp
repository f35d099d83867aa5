// sinew/metrics/memory.hpp: peak resident memory of this process.
#pragma once

#include <sys/resource.h>

#include <cstddef>

namespace sinew::metrics {

/// Peak resident set size in bytes (getrusage's ru_maxrss, which Linux reports in KiB).
inline std::size_t peak_rss_bytes() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return std::size_t(u.ru_maxrss) * 1024;
}

}  // namespace sinew::metrics
