// bench/support/core_latency.hpp: how far apart the host placed two of this process's CPUs, as the time one cache
// line takes to go from one to the other and back. Under a hypervisor two vCPUs share a last-level cache at some
// times and not at others; on the Zen 4 KVM guest of bench/results/2026-12-01-zen4-lenet5-vcpu-placement the round
// trip was 54-94 ns or 307-354 ns for seconds at a time, and LeNet-5 on 2 threads trained at 42-43k or 32-34k
// img/s with it. It is reported beside small nets' figures, so a reader can tell the host's state from a change
// in sinew.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <span>
#include <thread>
#include <vector>

#include "sinew/core/affinity.hpp"

namespace sinew::bench {

/// Median nanoseconds of a cache line's round trip between threads bound to `a` and `b` (each of `batches`
/// timed batches passes it there and back `trips` times), or 0 where a thread cannot be bound. Two threads of
/// its own do it; the caller's affinity is untouched.
inline double cache_line_round_trip_ns(int a, int b, int batches = 9, long trips = 10000) {
  const auto bind = [](int cpu) { return bind_this_thread(std::span<const int>(&cpu, 1)); };
  alignas(64) std::atomic<long> line{0};
  std::atomic<bool> bound_ok{true};
  std::vector<double> ns;
  for (int r = 0; r < batches && bound_ok; ++r) {
    line = 0;
    std::thread echo([&] {
      if (!bind(b)) bound_ok = false;
      for (long i = 0; i < trips; ++i) {
        while (line.load(std::memory_order_acquire) != 2 * i + 1) {}
        line.store(2 * i + 2, std::memory_order_release);
      }
    });
    std::thread serve([&] {
      if (!bind(a)) bound_ok = false;
      const auto t0 = std::chrono::steady_clock::now();
      for (long i = 0; i < trips; ++i) {
        line.store(2 * i + 1, std::memory_order_release);
        while (line.load(std::memory_order_acquire) != 2 * i + 2) {}
      }
      ns.push_back(std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() /
                   double(trips));
    });
    serve.join();
    echo.join();
  }
  if (!bound_ok || ns.empty()) return 0;
  std::sort(ns.begin(), ns.end());
  return ns[ns.size() / 2];
}

/// The round trip between the first two CPUs the calling thread may run on (0 where it has one).
inline double cache_line_round_trip_ns() {
  const std::vector<int> cpus = allowed_cpus();
  return cpus.size() < 2 ? 0 : cache_line_round_trip_ns(cpus[0], cpus[1]);
}

}  // namespace sinew::bench
