// sinew/dist/buckets.hpp: gradient buckets, the units in which the all-reduce strategies overlap communication
// with backward.
//
//   const auto buckets = sinew::dist::plan_buckets(model.layer_starts(), model.gradients().size(),
//                                                  sinew::dist::kDefaultBucketBytes / sizeof(float));
//   // buckets[0] holds the last layers: backward finishes it first, so its all-reduce starts first.
//
// Backward produces gradients from the last layer to the first, and the flat gradient buffer places later
// layers at larger offsets, so buckets are cut from the end of the buffer towards its start (PyTorch DDP's
// reverse order). Cuts fall only on layer boundaries: a bucket is complete exactly when backward has passed
// its first layer, and a layer larger than the bucket size is a bucket of its own.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "sinew/core/error.hpp"

namespace sinew::dist {

/// 1 MiB of floats a bucket. PyTorch DDP's 25 MB suits GPUs on networks where each message costs tens of
/// microseconds; here messages travel through shared memory or a cluster network at a few microseconds each,
/// so a 1 MiB bucket costs a few per cent in per-message latency and lets networks of a few MB (LeNet-5 is
/// 0.25 MB, ResNet-18 45 MB) start their first all-reduce long before backward ends. With 25 MB, everything
/// but the largest networks would be a single bucket that can only start after backward, with no overlap.
inline constexpr std::size_t kDefaultBucketBytes = std::size_t(1) << 20;

/// 256 Ki floats (1 MiB) of parameters the all-reduce strategies update at a time between polls of the buckets
/// still in flight (detail::allreduce_base::average_and_step): a fraction of a millisecond of memory-bound
/// optimizer work, so that a ring waiting for this rank's next message is not held up long.
inline constexpr std::size_t kUpdatePieceFloats = std::size_t(1) << 18;

/// The floats [begin, end) of the flat gradient buffer.
struct Bucket {
  /// the floats [begin, end) of the flat gradient buffer
  /// @{
  std::size_t begin = 0, end = 0;
  /// @}
  /// floats in the bucket
  std::size_t size() const noexcept { return end - begin; }
  /// Same range.
  friend bool operator==(const Bucket&, const Bucket&) = default;
};

/// Buckets of at least `bucket_floats` floats (the last one, holding the first layers, may be smaller), cut on
/// the layer starts, in reverse layer order: buckets[0] ends at `total`, each next one ends where the previous
/// begins, and the last begins at 0. `layer_starts`: ascending offsets where a layer's parameters begin, all
/// below `total` (an empty list is one layer at 0). bucket_floats == 0 gives one bucket; total == 0 gives none.
inline std::vector<Bucket> plan_buckets(std::span<const std::size_t> layer_starts, std::size_t total,
                                        std::size_t bucket_floats) {
  std::vector<Bucket> buckets;
  if (total == 0) return buckets;
  for (std::size_t i = 0; i < layer_starts.size(); ++i)
    if (layer_starts[i] >= total || (i > 0 && layer_starts[i] <= layer_starts[i - 1]))
      throw error("dist::plan_buckets: layer start " + std::to_string(i) + " (" + std::to_string(layer_starts[i]) +
                  ") is not ascending or not below the " + std::to_string(total) +
                  " gradient floats; pass the model's layer_starts() with its gradients().size()");
  std::size_t end = total;
  for (std::size_t i = layer_starts.size(); i-- > 0;) {
    const std::size_t begin = layer_starts[i];
    if (begin > 0 && bucket_floats > 0 && end - begin >= bucket_floats) {
      buckets.push_back({begin, end});
      end = begin;
    }
  }
  buckets.push_back({0, end});
  return buckets;
}

/// A fingerprint of a layout, the same on every rank that planned the same buckets (for comm::require_agreement).
inline std::uint64_t fingerprint(std::span<const Bucket> buckets) {
  std::uint64_t hash = 0xcbf29ce484222325ull;
  const auto mix = [&](std::uint64_t v) {
    for (int byte = 0; byte < 8; ++byte) hash = (hash ^ ((v >> (8 * byte)) & 0xffu)) * 0x100000001b3ull;
  };
  mix(buckets.size());
  for (const Bucket& b : buckets) mix(b.begin), mix(b.end);
  return hash;
}

}  // namespace sinew::dist
