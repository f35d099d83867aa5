// Fuzz target: the checkpoint manifest reader (io::parse_manifest, what Trainer::resume reads first).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "sinew/io/checkpoint.hpp"

namespace {
bool same(const sinew::io::CheckpointManifest& a, const sinew::io::CheckpointManifest& b) {
  if (a.files.size() != b.files.size()) return false;
  for (std::size_t i = 0; i < a.files.size(); ++i)
    if (a.files[i].name != b.files[i].name || a.files[i].bytes != b.files[i].bytes ||
        a.files[i].checksum != b.files[i].checksum)
      return false;
  return a.version == b.version && a.generation == b.generation && a.trainer == b.trainer &&
         a.network_layout == b.network_layout && a.seed == b.seed && a.accumulate == b.accumulate &&
         a.world_size == b.world_size &&
         a.step == b.step && a.epoch == b.epoch && a.batches_done == b.batches_done && a.batch_size == b.batch_size &&
         a.batches_per_epoch == b.batches_per_epoch && a.shuffle_seed == b.shuffle_seed;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const sinew::io::CheckpointManifest m = sinew::io::parse_manifest(text, "fuzz/checkpoint.json");
    for (const auto& f : m.files)  // a listed file never leaves the checkpoint directory
      if (f.name.empty() || f.name.find('/') != std::string::npos || f.name == "." || f.name == "..") __builtin_trap();
    // What was accepted writes back as a manifest that reads as the same.
    if (!same(m, sinew::io::parse_manifest(sinew::io::manifest_json(m), "fuzz/again.json"))) __builtin_trap();
  } catch (const sinew::data_error&) {
  }
  return 0;
}
