// sinew/dist/sync_mode.hpp: how workers wait for each other, as tag policies.
#pragma once

#include <concepts>
#include <string_view>

namespace sinew {

/// Every step, every worker's gradient enters the same update (all-reduce, synchronous parameter server).
struct Sync {
  /// for reports and checkpoints
  static constexpr std::string_view kName = "sync";
};
/// Servers apply each worker's gradient as it arrives; workers never wait for each other.
struct Async {
  /// for reports and checkpoints
  static constexpr std::string_view kName = "async";
};
/// Asynchronous, but no worker runs more than K steps ahead of the slowest.
template <int K>
struct BoundedStaleness {
  static_assert(K >= 0, "BoundedStaleness<K>: K is a number of steps and must not be negative");
  /// for reports and checkpoints
  static constexpr std::string_view kName = "bounded_staleness";
  /// K: the most steps a worker may run ahead of the slowest
  static constexpr int kStaleness = K;
};

template <class T>
inline constexpr bool is_sync_mode_v = std::same_as<T, Sync> || std::same_as<T, Async>;
template <int K>
inline constexpr bool is_sync_mode_v<BoundedStaleness<K>> = true;

/// Sync, Async or BoundedStaleness<K>.
template <class T>
concept SyncModePolicy = is_sync_mode_v<T>;

}  // namespace sinew
