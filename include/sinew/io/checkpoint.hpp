// sinew/io/checkpoint.hpp: a training run on disk, written so that a crash at any byte loses nothing.
//
//   trainer.save_checkpoint("run/ckpt");  // every rank calls it, between epochs or from the step callback
//   trainer.resume("run/ckpt");           // on a freshly built trainer of the same type, on any number of ranks
//
// The trainer hands its run over as an io::RunState (io/run_state.hpp): save_run writes it, load_run reads it
// back. Everything about the files is here; the trainer knows none of it.
//
// A checkpoint directory holds, for generation G (one more than the last checkpoint written there):
//   model-gG.safetensors    rank 0's parameters and BatchNorm statistics under PyTorch's state_dict names
//                           (torch: model.load_state_dict(safetensors.torch.load_file(...))), as io/safetensors.hpp;
//   rank<r>-gG.safetensors  one per rank, written by that rank: its BatchNorm statistics ("model.buffers") and
//                           every section of the RunState under its prefix: its optimizer's buffers
//                           ("optimizer.momentum_buffer", "optimizer.exp_avg" ...), on a parameter server its
//                           shard and the shard optimizer's buffers ("shard.parameters", "shard.optimizer.*"),
//                           under dist::Compressed the compressor's residual ("compressor.residual" ...); the
//                           counters (the model's dropout step "model_step", each section's counts and keys:
//                           "optimizer.steps", a shard's range "shard.begin" and "shard.end") are its string
//                           metadata;
//   checkpoint.json         the manifest: format and version tag, generation, the trainer's type (network,
//                           backend, strategy, sync mode, optimizer), seed, batches per step
//                           (TrainerOptions::accumulate), world size, step, epoch and the
//                           batches of it already trained (the loader's position), the loader's batch size,
//                           batches per epoch and shuffle seed, and every file above with
//                           its size in bytes and FNV-1a 64 checksum.
// Saved between epochs, every rank's BatchNorm statistics are the same (the strategy averaged them at the
// epoch's end: dist/strategy_spec.hpp); saved from the step callback, each rank's own, so that the resumed run
// continues bit for bit.
// The manifest is what makes a checkpoint exist: a file it does not list is not part of any checkpoint.
//
// Atomicity. Every file is written under a temporary name, fsync'ed, renamed to its name and the directory
// fsync'ed; data files carry the generation in their name, so the new files never replace the files the
// current manifest lists. Once every rank has written its files, rank 0 writes the new manifest the same way
// (the rename replaces the old manifest: the one atomic step), then removes the files no manifest lists. A
// crash before that rename leaves the previous manifest and its files whole; a crash after it, the new ones.
// The directory must be one every rank sees (a shared file system with several hosts).
//
// One run at a time. Saving into a directory or resuming from it takes this rank's lock there first
// (io/directory_lock.hpp), held until the process exits: a second run on the same directory is refused with a
// sentence naming the first (host, pid, since when), and a lock left by a killed run is taken over with a note.
//
// Loading checks the version tag, the trainer's type (a mismatch names what differs), and each
// file's size and checksum before a value is changed, so a refused resume leaves the trainer as it was; a
// truncated or corrupt file is a data_error naming the file. With several ranks, a rank that cannot save or
// load makes every rank throw (none is left waiting in a collective).
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "sinew/core/error.hpp"
#include "sinew/core/named_state.hpp"
#include "sinew/io/detail/json_reader.hpp"
#include "sinew/io/directory_lock.hpp"
#include "sinew/io/run_state.hpp"
#include "sinew/io/safetensors.hpp"

namespace sinew::io {

/// One file of a checkpoint, as the manifest lists it.
struct CheckpointFile {
  std::string name;             ///< in the checkpoint directory
  /// its size
  std::uint64_t bytes = 0;
  std::uint64_t checksum = 0;   ///< FNV-1a 64 of the whole file
};

/// What checkpoint.json says.
struct CheckpointManifest {
  /// the `format` field that marks a sinew checkpoint
  static constexpr std::string_view kFormat = "sinew-checkpoint";
  /// the version this sinew writes and reads
  static constexpr std::uint64_t kVersion = 1;

  /// the file's version: another is refused with a sentence
  std::uint64_t version = kVersion;
  /// counts checkpoints written to the directory; names the data files (model-gN, rankR-gN)
  std::uint64_t generation = 0;
  /// The trainer's type, part by part, in this order: network, backend, strategy, sync mode, optimizer.
  std::vector<std::pair<std::string, std::string>> trainer;
  std::string network_layout;   ///< input shape, lowered nodes and parameter count: what must match
  std::uint64_t seed = 0;       ///< TrainerOptions::seed (initialisation and dropout masks)
  /// TrainerOptions::accumulate, the batches per step (absent in a manifest written before it existed: 1)
  std::uint64_t accumulate = 1;
  /// ranks of the run that saved
  std::uint64_t world_size = 1;
  std::uint64_t step = 0;       ///< training steps done
  std::uint64_t epoch = 0;      ///< the epoch the next train_epoch trains
  std::uint64_t batches_done = 0;  ///< of that epoch, already trained (saved mid-epoch; 0 between epochs)
  /// The loader rank 0 trained with last (0: none yet): resuming with another is refused at the next epoch.
  /// @{
  std::uint64_t batch_size = 0, batches_per_epoch = 0;
  /// @}
  /// the loader's shuffle seed, where it has one
  std::optional<std::uint64_t> shuffle_seed;
  /// every data file, with its size and checksum
  std::vector<CheckpointFile> files;

  /// "Trainer<net, backend, strategy, mode, optimizer>".
  std::string trainer_type() const { return trainer_type_name(trainer); }
  /// The listed file called `name`, or nullptr.
  const CheckpointFile* find(std::string_view name) const {
    for (const CheckpointFile& f : files)
      if (f.name == name) return &f;
    return nullptr;
  }
};

inline constexpr std::string_view kManifestName = "checkpoint.json";

/// The files of generation g.
inline std::string model_file_name(std::uint64_t g) { return "model-g" + std::to_string(g) + ".safetensors"; }
inline std::string rank_file_name(int rank, std::uint64_t g) {
  return "rank" + std::to_string(rank) + "-g" + std::to_string(g) + ".safetensors";
}

namespace detail {

/// Tests kill the writer here (a hook that raises SIGKILL at one stage) to check that every crash leaves a
/// loadable checkpoint. Stages, in order: "rank file written" (fsync'ed, not renamed), "rank file renamed",
/// "files written" (every rank's), "manifest written" (fsync'ed, not renamed), "manifest renamed", "cleaned".
inline std::function<void(std::string_view stage)> checkpoint_fault_hook;
inline void fault_point(std::string_view stage) {
  if (checkpoint_fault_hook) checkpoint_fault_hook(stage);
}

inline std::uint64_t fnv1a64(const void* data, std::size_t n, std::uint64_t h = 0xcbf29ce484222325ull) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}

/// The size and FNV-1a 64 checksum of a file.
inline CheckpointFile describe_file(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw data_error("checkpoint: cannot open " + file.string() + " for reading");
  CheckpointFile f{file.filename().string(), 0, 0xcbf29ce484222325ull};
  std::vector<char> buffer(1 << 16);
  while (in) {
    in.read(buffer.data(), std::streamsize(buffer.size()));
    const auto got = std::size_t(in.gcount());
    f.checksum = fnv1a64(buffer.data(), got, f.checksum);
    f.bytes += got;
  }
  if (in.bad()) throw data_error("checkpoint: reading " + file.string() + " failed");
  return f;
}

inline void fsync_path(const std::filesystem::path& path, bool directory) {
  const int fd = ::open(path.c_str(), directory ? O_RDONLY | O_DIRECTORY : O_RDONLY);
  if (fd < 0) throw error("checkpoint: cannot open " + path.string() + " to sync it: " + std::strerror(errno));
  const int rc = ::fsync(fd);
  const int saved = errno;
  ::close(fd);
  if (rc != 0) throw error("checkpoint: cannot sync " + path.string() + " to disk: " + std::strerror(saved));
}

/// Makes `tmp` (complete) durable under the name `file`: fsync, rename, fsync of the directory.
inline void commit_file(const std::filesystem::path& tmp, const std::filesystem::path& file) {
  fsync_path(tmp, false);
  std::error_code ec;
  std::filesystem::rename(tmp, file, ec);
  if (ec) throw error("checkpoint: cannot rename " + tmp.string() + " to " + file.string() + ": " + ec.message());
  fsync_path(file.parent_path().empty() ? std::filesystem::path(".") : file.parent_path(), true);
}

inline std::string hex64(std::uint64_t x) {
  char buf[20];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(x));
  return buf;
}

}  // namespace detail

/// The manifest as JSON text.
inline std::string manifest_json(const CheckpointManifest& m) {
  detail::json j = {{"format", CheckpointManifest::kFormat},
                    {"version", m.version},
                    {"generation", m.generation},
                    {"trainer", detail::json::object()}};
  for (const auto& [k, v] : m.trainer) j["trainer"][k] = v;
  j["network_layout"] = m.network_layout;
  j["seed"] = m.seed;
  j["accumulate"] = m.accumulate;
  j["world_size"] = m.world_size;
  j["step"] = m.step;
  j["epoch"] = m.epoch;
  j["batches_done"] = m.batches_done;
  j["loader"] = {{"batch_size", m.batch_size}, {"batches_per_epoch", m.batches_per_epoch}};
  if (m.shuffle_seed) j["loader"]["shuffle_seed"] = *m.shuffle_seed;
  auto& files = j["files"] = detail::json::array();
  for (const auto& f : m.files)
    files.push_back({{"name", f.name}, {"bytes", f.bytes}, {"fnv1a64", detail::hex64(f.checksum)}});
  // A name that is not UTF-8 (the trainer's type names are ASCII) is written as U+FFFD rather than failing.
  return j.dump(2, ' ', false, detail::json::error_handler_t::replace) + "\n";
}

/// Parses a manifest's text; `file` names it in errors (data_error). Never trusts the text: a missing or
/// mistyped member, an unknown format or version, or a file name that leaves the directory is refused.
inline CheckpointManifest parse_manifest(std::string_view text, const std::string& file) {
  const auto corrupt = [&](const std::string& what) -> data_error {
    return data_error("checkpoint: " + file + " is not a valid checkpoint manifest: " + what +
                      " (a truncated or corrupt file? the checkpoint cannot be loaded)");
  };
  detail::json doc;
  try {
    doc = detail::parse_json(text);
  } catch (const std::exception& e) {
    throw corrupt(std::string("not valid JSON (") + e.what() + ")");
  }
  if (!doc.is_object()) throw corrupt("not a JSON object");
  const auto u64 = [&](const detail::json& in, std::string_view key) {
    const detail::json* v = detail::member(in, key);
    std::uint64_t x = 0;
    if (!v || !detail::to_u64(*v, x)) throw corrupt("\"" + std::string(key) + "\" is missing or not a non-negative integer");
    return x;
  };
  const auto str = [&](const detail::json& in, std::string_view key) {
    const detail::json* v = detail::member(in, key);
    if (!v || !v->is_string()) throw corrupt("\"" + std::string(key) + "\" is missing or not a string");
    return v->get<std::string>();
  };
  if (str(doc, "format") != CheckpointManifest::kFormat) throw corrupt("its format is not sinew-checkpoint");
  CheckpointManifest m;
  m.version = u64(doc, "version");
  if (m.version != CheckpointManifest::kVersion)
    throw data_error("checkpoint: " + file + " has version " + std::to_string(m.version) +
                     "; this sinew reads version " + std::to_string(CheckpointManifest::kVersion) +
                     " (written by another sinew?)");
  m.generation = u64(doc, "generation");
  const detail::json* trainer = detail::member(doc, "trainer");
  if (!trainer || !trainer->is_object()) throw corrupt("\"trainer\" is missing or not an object");
  for (const auto& [k, v] : trainer->items()) {
    if (!v.is_string()) throw corrupt("trainer." + k + " is not a string");
    m.trainer.emplace_back(k, readable_type_name(v.get<std::string>()));  // as older sinew wrote literals too
  }
  m.network_layout = str(doc, "network_layout");
  m.seed = u64(doc, "seed");
  if (detail::member(doc, "accumulate")) m.accumulate = u64(doc, "accumulate");
  if (m.accumulate == 0 || m.accumulate > (1u << 24)) throw corrupt("\"accumulate\" is out of range");
  m.world_size = u64(doc, "world_size");
  m.step = u64(doc, "step");
  m.epoch = u64(doc, "epoch");
  m.batches_done = u64(doc, "batches_done");
  if (m.world_size == 0 || m.world_size > (1u << 24)) throw corrupt("\"world_size\" is out of range");
  if (m.epoch > (1u << 30)) throw corrupt("\"epoch\" is out of range");
  if (m.batches_done > (std::uint64_t(1) << 40)) throw corrupt("\"batches_done\" is out of range");
  const detail::json* loader = detail::member(doc, "loader");
  if (!loader || !loader->is_object()) throw corrupt("\"loader\" is missing or not an object");
  m.batch_size = u64(*loader, "batch_size");
  m.batches_per_epoch = u64(*loader, "batches_per_epoch");
  if (detail::member(*loader, "shuffle_seed")) m.shuffle_seed = u64(*loader, "shuffle_seed");
  const detail::json* files = detail::member(doc, "files");
  if (!files || !files->is_array()) throw corrupt("\"files\" is missing or not an array");
  for (const detail::json& f : *files) {
    if (!f.is_object()) throw corrupt("an entry of \"files\" is not an object");
    CheckpointFile cf{str(f, "name"), u64(f, "bytes"), 0};
    if (cf.name.empty() || cf.name.find('/') != std::string::npos || cf.name == "." || cf.name == "..")
      throw corrupt("the file name \"" + cf.name + "\" is not a plain name in the checkpoint directory");
    const std::string hex = str(f, "fnv1a64");
    if (hex.size() != 16 || hex.find_first_not_of("0123456789abcdef") != std::string::npos)
      throw corrupt("the checksum of " + cf.name + " is not 16 hexadecimal digits");
    cf.checksum = std::stoull(hex, nullptr, 16);
    m.files.push_back(std::move(cf));
  }
  return m;
}

/// Reads dir/checkpoint.json (data_error naming it when it is missing, truncated or corrupt).
inline CheckpointManifest read_manifest(const std::filesystem::path& dir) {
  const std::filesystem::path file = dir / kManifestName;
  std::error_code ec;
  if (!std::filesystem::exists(file, ec))
    throw data_error("checkpoint: " + dir.string() + " holds no checkpoint (" + std::string(kManifestName) +
                     " is missing; save_checkpoint writes it last)");
  const std::uint64_t size = std::filesystem::file_size(file, ec);
  if (ec || size > (16u << 20))
    throw data_error("checkpoint: " + file.string() + " is unreadable or larger than a manifest can be");
  std::ifstream in(file, std::ios::binary);
  std::string text(size, '\0');
  in.read(text.data(), std::streamsize(size));
  if (!in) throw data_error("checkpoint: cannot read " + file.string());
  return parse_manifest(text, file.string());
}

/// Checks that dir/`name` is listed in `m` and has the listed size and checksum (data_error naming the file).
inline void verify_file(const std::filesystem::path& dir, const CheckpointManifest& m, const std::string& name) {
  const CheckpointFile* listed = m.find(name);
  if (!listed)
    throw data_error("checkpoint: the manifest in " + dir.string() + " does not list " + name +
                     ", which this rank needs (a manifest written by another sinew, or edited?)");
  const std::filesystem::path file = dir / name;
  std::error_code ec;
  if (!std::filesystem::exists(file, ec))
    throw data_error("checkpoint: " + file.string() + " is missing (the manifest lists it; was it deleted?)");
  const CheckpointFile found = detail::describe_file(file);
  if (found.bytes != listed->bytes)
    throw data_error("checkpoint: " + file.string() + " is " + std::to_string(found.bytes) +
                     " bytes but the manifest says " + std::to_string(listed->bytes) + " (truncated or overwritten?)");
  if (found.checksum != listed->checksum)
    throw data_error("checkpoint: " + file.string() + " is corrupt: its FNV-1a 64 checksum is " +
                     detail::hex64(found.checksum) + ", the manifest says " + detail::hex64(listed->checksum));
}

/// The generation after every one found in `dir`: in its manifest, and in the names of files left by a
/// checkpoint that crashed before its manifest (their names must not be reused while a manifest lists them).
inline std::uint64_t next_generation(const std::filesystem::path& dir) {
  std::uint64_t last = 0;
  try {
    last = read_manifest(dir).generation;
  } catch (const data_error&) {
  }
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    const auto g = name.find("-g");
    if (g == std::string::npos) continue;
    std::uint64_t x = 0;
    std::size_t i = g + 2;
    for (; i < name.size() && name[i] >= '0' && name[i] <= '9' && x < (1ull << 50); ++i) x = x * 10 + (name[i] - '0');
    if (i > g + 2) last = std::max(last, x);
  }
  return last + 1;
}

/// How the ranks of a job act together while saving or loading. With one rank: the identities.
struct CheckpointGroup {
  /// this rank and the number of ranks
  /// @{
  int rank = 0, world_size = 1;
  /// @}
  /// Collective: the number of ranks that passed true.
  std::function<int(bool failed)> count_failures = [](bool failed) { return int(failed); };
  /// Collective: rank 0's value on every rank.
  std::function<std::uint64_t(std::uint64_t)> broadcast = [](std::uint64_t x) { return x; };
};

/// Builds the group from a communicator (c.rank(), c.size(), c.allreduce_sum, c.broadcast over floats).
template <class Comm>
CheckpointGroup group_of(Comm& comm) {
  CheckpointGroup g;
  g.rank = comm.rank(), g.world_size = comm.size();
  g.count_failures = [&comm](bool failed) {
    float n[1] = {failed ? 1.0f : 0.0f};
    comm.allreduce_sum(std::span<float>(n));
    return int(n[0] + 0.5f);
  };
  g.broadcast = [&comm](std::uint64_t x) {
    float parts[4];  // 16 bits each: exact in a float
    for (int i = 0; i < 4; ++i) parts[i] = float((x >> (16 * i)) & 0xffff);
    comm.broadcast(std::span<float>(parts), 0);
    std::uint64_t y = 0;
    for (int i = 0; i < 4; ++i) y |= std::uint64_t(parts[i]) << (16 * i);
    return y;
  };
  return g;
}

namespace detail {
/// Takes this rank's lock of the directory (io/directory_lock.hpp) before the rank writes or reads there; a
/// lock taken over from a run that was killed is said on stderr, once.
inline void take_lock(const std::filesystem::path& dir, int rank) {
  const std::string note = lock_directory(dir, rank);
  if (!note.empty()) std::fprintf(stderr, "sinew: %s\n", note.c_str());
}

/// Runs `f` on every rank; if it threw on any, every rank throws: the rank's own message, or one naming how
/// many others failed.
template <class F>
void on_every_rank(const CheckpointGroup& group, std::string_view doing, F&& f) {
  std::string message;
  bool data = false;
  try {
    f();
  } catch (const data_error& e) {
    message = e.what(), data = true;
  } catch (const std::exception& e) {
    message = e.what();
  }
  const int failed = group.count_failures(!message.empty());
  if (failed == 0) return;
  if (message.empty())
    message = "checkpoint: " + std::to_string(failed) + " other rank" + (failed == 1 ? "" : "s") + " could not " +
              std::string(doing) + " (see their messages); this rank stops too";
  if (data) throw data_error(message);
  throw error(message);
}
}  // namespace detail

/// Collective: writes generation next_generation(dir) of a checkpoint into `dir` (see the top of this file).
/// `write_files(g)` writes this rank's files of generation g, each with commit_file, and returns nothing;
/// `manifest` (used on rank 0) lacks only the generation and the file list, which this fills in.
template <class WriteFiles>
void save_checkpoint(const std::filesystem::path& dir, const CheckpointGroup& group, CheckpointManifest manifest,
                     WriteFiles&& write_files) {
  std::uint64_t generation = 0;
  detail::on_every_rank(group, "create the checkpoint directory", [&] {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) throw error("checkpoint: cannot create the directory " + dir.string() + ": " + ec.message());
    detail::take_lock(dir, group.rank);
  });
  generation = group.broadcast(group.rank == 0 ? next_generation(dir) : 0);
  detail::on_every_rank(group, "write its checkpoint files", [&] { write_files(generation); });
  detail::fault_point("files written");
  detail::on_every_rank(group, "write the checkpoint manifest", [&] {
    if (group.rank != 0) return;
    manifest.generation = generation;
    manifest.world_size = std::uint64_t(group.world_size);
    manifest.files = {detail::describe_file(dir / model_file_name(generation))};
    for (int r = 0; r < group.world_size; ++r)
      manifest.files.push_back(detail::describe_file(dir / rank_file_name(r, generation)));
    const std::filesystem::path tmp = dir / (std::string(kManifestName) + ".tmp");
    {
      std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
      out << manifest_json(manifest);
      out.close();
      if (!out) throw error("checkpoint: writing " + tmp.string() + " failed (disk full?)");
    }
    detail::fsync_path(tmp, false);
    detail::fault_point("manifest written");
    detail::commit_file(tmp, dir / kManifestName);
    detail::fault_point("manifest renamed");
    // What no manifest lists: older generations, and what a crashed checkpoint left.
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
      const std::string name = entry.path().filename().string();
      const bool ours = name.ends_with(".tmp") || name.ends_with(".part") ||
                        (name.ends_with(".safetensors") && name.find("-g") != std::string::npos &&
                         (name.starts_with("model-g") || name.starts_with("rank")));
      if (ours && !manifest.find(name)) std::filesystem::remove(entry.path(), ec);
    }
    detail::fault_point("cleaned");
  });
}

namespace detail {

/// Writes this rank's files of generation g: rank 0 the model file, every rank its rank file.
template <NamedNetwork Net>
void write_run_files(const std::filesystem::path& dir, std::uint64_t g, const RunState& run) {
  if (run.ranks.rank == 0) {
    const std::filesystem::path file = dir / model_file_name(g), tmp = file.string() + ".part";
    save_safetensors<Net>(tmp, run.parameters, run.buffers, run.model_step);
    commit_file(tmp, file);
  }
  std::vector<TensorRef> refs;
  std::vector<std::pair<std::string, std::string>> meta = {{"rank", std::to_string(run.ranks.rank)},
                                                           {"model_step", std::to_string(run.model_step)}};
  const auto add = [&](std::string name, std::span<const float> data) {
    refs.push_back({std::move(name), "F32", {std::int64_t(data.size())}, std::as_bytes(data)});
  };
  add("model.buffers", run.buffers);
  for (const auto& [prefix, state] : run.sections) {
    for (const auto& [name, data] : state.tensors) add(prefix + name, data);
    for (const auto& [name, value] : state.counts) meta.emplace_back(prefix + name, std::to_string(value));
    for (const auto& [name, value] : state.keys) meta.emplace_back(prefix + name, std::to_string(value));
  }
  const std::filesystem::path file = dir / rank_file_name(run.ranks.rank, g), tmp = file.string() + ".part";
  write_safetensors(tmp, refs, meta);
  fault_point("rank file written");
  commit_file(tmp, file);
  fault_point("rank file renamed");
}

inline void read_f32(SafetensorsReader& reader, const std::string& name, std::span<float> out) {
  const SafetensorsTensor* t = reader.find(name);
  if (!t || t->dtype != "F32" || t->end - t->begin != out.size() * sizeof(float))
    throw data_error("checkpoint: " + reader.path().string() + (t ? " has the tensor " + name + " as " +
                     std::to_string(t->end - t->begin) + " bytes of " + t->dtype : " lacks the tensor " + name) +
                     "; this trainer needs " + std::to_string(out.size()) + " F32 (another configuration?)");
  reader.read(*t, std::as_writable_bytes(out));
}

inline std::uint64_t read_count(const SafetensorsReader& reader, const std::string& key) {
  for (const auto& [k, v] : reader.metadata()) {
    if (k != key) continue;
    char* end = nullptr;
    const unsigned long long x = std::strtoull(v.c_str(), &end, 10);
    if (!v.empty() && end && *end == '\0' && v[0] != '-') return x;
  }
  throw data_error("checkpoint: " + reader.path().string() + " lacks the count " + key +
                   " in its metadata, or it is not a number (a file of another sinew?)");
}

/// Refuses a checkpoint that another configuration wrote, naming what differs.
inline void check_same_run(const CheckpointManifest& m, const RunState& run, const std::filesystem::path& dir) {
  const std::string where = "checkpoint: " + (dir / kManifestName).string();
  std::vector<std::string> differ;
  for (const auto& part : run.type) {
    const auto it =
        std::find_if(m.trainer.begin(), m.trainer.end(), [&](const auto& kv) { return kv.first == part.first; });
    const bool same = part.first == "network" ? m.network_layout == run.network_layout
                                              : it != m.trainer.end() && it->second == part.second;
    if (!same) differ.push_back(part.first == "sync_mode" ? "sync mode" : part.first);
  }
  if (!differ.empty()) {
    std::string what;
    for (std::size_t i = 0; i < differ.size(); ++i)
      what += (i == 0 ? "" : i + 1 == differ.size() ? " and " : ", ") + differ[i];
    throw error(where + " was written by " + m.trainer_type() + "; this trainer is " + run.type_name() + ": the " +
                what + (differ.size() == 1 ? " differs" : " differ") + " (resume with the trainer that saved it)");
  }
  const auto servers = std::uint64_t(run.ranks.servers());
  if (m.world_size <= servers)
    throw data_error(where + " was written by " + std::to_string(m.world_size) + " ranks, but this strategy has " +
                     std::to_string(servers) + " servers and needs a worker beside them (a corrupt manifest?)");
  if (m.world_size != std::uint64_t(run.ranks.world_size) && m.batches_done > 0 && m.batch_size == 0)
    throw data_error(where + " was saved mid-epoch but records no batch size (a corrupt manifest?)");
  if (m.seed != run.seed)
    throw error(where + " was written with TrainerOptions::seed " + std::to_string(m.seed) + "; this trainer has " +
                std::to_string(run.seed) + ", which would draw other dropout masks (build it with seed " +
                std::to_string(m.seed) + ")");
  // A step's batches would be grouped otherwise: the step counts, schedule and position would mean other things.
  if (m.accumulate != run.accumulate)
    throw error(where + " was written with TrainerOptions::accumulate " + std::to_string(m.accumulate) +
                "; this trainer has " + std::to_string(run.accumulate) +
                ", which would group the batches into other steps (build it with accumulate " +
                std::to_string(m.accumulate) + ")");
}

/// The number of workers of the saved run: the same servers (the strategy's type fixes them), the rest.
inline std::uint64_t saved_workers(const CheckpointManifest& m, const RankFacts& now) {
  return m.world_size - std::uint64_t(now.servers());
}
/// The saved rank whose file this rank reads: its own on as many ranks; on another number, worker i reads
/// saved worker i mod (saved workers) and server s (a rank after the workers) saved server s.
inline int saved_rank_for(const CheckpointManifest& m, const RankFacts& now) {
  if (m.world_size == std::uint64_t(now.world_size)) return now.rank;
  const std::uint64_t workers = saved_workers(m, now);
  if (now.is_worker()) return int(std::uint64_t(now.rank) % workers);
  return int(workers) + (now.rank - now.workers);
}

/// Where the resumed run continues on `now`'s ranks: run.epoch and run.batches_done, and the sentence
/// load_run returns (empty on as many ranks).
inline std::string continue_position(const CheckpointManifest& m, RunState& run) {
  const RankFacts& now = run.ranks;
  run.step = m.step, run.epoch = m.epoch, run.batches_done = m.batches_done;
  const bool same_ranks = m.world_size == std::uint64_t(now.world_size);
  // On other ranks each loader gives another number of batches: only the batch size and seed must match.
  run.loader = LoaderFacts{m.batch_size, same_ranks ? m.batches_per_epoch : 0, m.shuffle_seed};
  if (same_ranks) return {};
  const std::uint64_t was = saved_workers(m, now), workers = std::uint64_t(now.workers);
  const auto count = [](std::uint64_t n, const char* what) {
    return std::to_string(n) + " " + what + (n == 1 ? "" : "s");
  };
  const std::string note = "resumed on " + count(std::uint64_t(now.world_size), "rank") + " (" +
                           count(workers, "worker") + ") a run saved on " + std::to_string(m.world_size) + " (" +
                           count(was, "worker") + ") at step " + std::to_string(m.step) + ", epoch " +
                           std::to_string(m.epoch);
  if (m.batches_done == 0) return note + ": the epoch starts anew on the new workers";
  // The saved workers dealt the first batches_done x batch x saved workers samples of the epoch's permutation
  // (rank r takes positions r, r + W, ...): the new workers continue there if it is a whole number of steps
  // (of `accumulate` batches each).
  const std::uint64_t dealt = m.batches_done * m.batch_size * was, per_batch = m.batch_size * workers,
                      per_step = per_batch * m.accumulate;
  if (dealt % per_step == 0) {
    run.batches_done = dealt / per_batch;
    return note + " after " + std::to_string(dealt) + " samples of it: the new workers continue from that "
           "sample, at their batch " + std::to_string(run.batches_done);
  }
  run.epoch = m.epoch + 1;
  run.batches_done = 0;
  return note + " after " + std::to_string(dealt) + " samples of it, which is no whole number of steps of " +
         std::to_string(per_step) + " samples on the new workers: the rest of epoch " + std::to_string(m.epoch) +
         " is not trained, and training continues at the start of epoch " + std::to_string(run.epoch);
}

}  // namespace detail

/// Collective: writes `run` into `dir` as a new checkpoint (see the top of this file). Every rank calls it with
/// its own RunState; rank 0's counters and loader facts go into the manifest.
template <NamedNetwork Net>
void save_run(const std::filesystem::path& dir, const CheckpointGroup& group, const RunState& run) {
  CheckpointManifest m;
  m.trainer = run.type;
  m.network_layout = run.network_layout;
  m.seed = run.seed;
  m.accumulate = run.accumulate;
  m.step = run.step, m.epoch = run.epoch, m.batches_done = run.batches_done;
  m.batch_size = run.loader.batch_size, m.batches_per_epoch = run.loader.batches_per_epoch;
  m.shuffle_seed = run.loader.shuffle_seed;
  save_checkpoint(dir, group, std::move(m), [&](std::uint64_t g) { detail::write_run_files<Net>(dir, g, run); });
}

/// Collective: reads the checkpoint in `dir` into `run`, which the trainer filled as for save_run (its type,
/// seed and ranks are what the checkpoint must match; its views are where the state goes). Every file is
/// checked on every rank before any view is written, so a refused load leaves them as they were. Afterwards
/// run's counters, loader facts and every section's counts hold the saved ones (on another number of ranks,
/// the position the new workers continue from). Returns what did not carry over exactly, as a sentence
/// (empty when the run continues as saved).
template <NamedNetwork Net>
std::string load_run(const std::filesystem::path& dir, const CheckpointGroup& group, RunState& run) {
  CheckpointManifest m;
  std::vector<float> params(run.parameters.size()), buffers(run.buffers.size());
  std::uint64_t model_step = 0;
  std::vector<std::vector<std::vector<float>>> staged(run.sections.size());
  std::vector<std::vector<std::uint64_t>> counts(run.sections.size());
  detail::on_every_rank(group, "load the checkpoint", [&] {
    if (std::filesystem::is_directory(dir)) detail::take_lock(dir, group.rank);
    m = read_manifest(dir);
    detail::check_same_run(m, run, dir);
    const std::string model_file = model_file_name(m.generation);
    const std::string rank_file = rank_file_name(detail::saved_rank_for(m, run.ranks), m.generation);
    verify_file(dir, m, model_file);
    verify_file(dir, m, rank_file);
    load_safetensors<Net>(dir / model_file, params, buffers);
    SafetensorsReader reader(dir / rank_file);
    detail::read_f32(reader, "model.buffers", buffers);
    model_step = detail::read_count(reader, "model_step");
    for (std::size_t i = 0; i < run.sections.size(); ++i) {
      const auto& [prefix, state] = run.sections[i];
      for (const auto& [name, value] : state.keys)
        if (const std::uint64_t saved = detail::read_count(reader, prefix + name); saved != value)
          throw data_error("checkpoint: " + reader.path().string() + " has " + prefix + name + " = " +
                           std::to_string(saved) + " but this rank's is " + std::to_string(value) +
                           " (another configuration?)");
      for (const auto& [name, data] : state.tensors) {
        staged[i].emplace_back(data.size());
        detail::read_f32(reader, prefix + name, staged[i].back());
      }
      for (const auto& [name, value] : state.counts) counts[i].push_back(detail::read_count(reader, prefix + name));
    }
  });
  // Every check passed on every rank: now write into the views, the parameters before the sections (a
  // parameter server's shard is a view of them).
  std::copy(params.begin(), params.end(), run.parameters.begin());
  std::copy(buffers.begin(), buffers.end(), run.buffers.begin());
  run.model_step = model_step;
  for (std::size_t i = 0; i < run.sections.size(); ++i) {
    NamedState& state = run.sections[i].second;
    for (std::size_t t = 0; t < state.tensors.size(); ++t)
      std::copy(staged[i][t].begin(), staged[i][t].end(), state.tensors[t].second.begin());
    for (std::size_t c = 0; c < state.counts.size(); ++c) state.counts[c].second = counts[i][c];
  }
  return detail::continue_position(m, run);
}

}  // namespace sinew::io
