// sinew/core/named_state.hpp: state that a checkpoint carries, as named views.
//
// An optimizer, a strategy or a compressor that keeps something between steps hands it to the checkpoint as a
// NamedState: float tensors by name (views of its own storage: saving reads them, resuming writes into them
// in place once every file was checked), counters by name (saved; on resume read back into the same entries
// and handed to the owner, which applies them), and keys (saved; on resume they must read the same, else the
// checkpoint is refused before anything changes: a parameter server's shard range). io/checkpoint.hpp writes
// them into the rank's file under the owner's prefix ("optimizer.", "shard.", "compressor.").
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace sinew {

/// Named views of state to save and restore (see the file comment).
struct NamedState {
  /// float tensors, written from and (on resume) read into in place
  std::vector<std::pair<std::string, std::span<float>>> tensors;
  /// counters: saved; on resume the values read back
  std::vector<std::pair<std::string, std::uint64_t>> counts;
  /// facts that must match on resume (else the checkpoint is refused)
  std::vector<std::pair<std::string, std::uint64_t>> keys;

  /// The counter called `name` (0 if there is none).
  std::uint64_t count(const std::string& name) const {
    for (const auto& [k, v] : counts)
      if (k == name) return v;
    return 0;
  }
  /// Whether it holds nothing.
  bool empty() const noexcept { return tensors.empty() && counts.empty() && keys.empty(); }
};

}  // namespace sinew
