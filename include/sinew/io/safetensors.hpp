// sinew/io/safetensors.hpp: a network's weights in and out as safetensors, under PyTorch's state_dict keys.
//
//   io::save_safetensors(model, "resnet18.safetensors");   // torch: model.load_state_dict(tensors, strict=True)
//   io::load_safetensors(model, "resnet18.safetensors");   // from a file written from torchvision's resnet18
//
// The format is Hugging Face's: an 8-byte little-endian header length n, n bytes of JSON mapping each tensor's
// name to {"dtype", "shape", "data_offsets": [begin, end]} (offsets from the first byte after the header), an
// optional "__metadata__" object of strings, then the raw little-endian data. The names are the network's
// state_dict keys (nets/state_dict.hpp): conv1.weight, layer1.0.bn1.running_mean, features.0.weight, ...
//
// Parameters and running statistics are F32. BatchNorm's num_batches_tracked is an I64 scalar in PyTorch;
// sinew keeps one count for the whole model instead, Model::step() (training-mode forward passes), which is
// what every BatchNorm of a PyTorch model trained as a whole counts. Saving writes step() into every
// num_batches_tracked; loading sets step() to their largest value (they are equal in files PyTorch writes).
// sinew's BatchNorm never reads the count (its momentum is fixed), so the value changes no result.
//
// Loading is strict, as load_state_dict(strict=True): a missing, extra, mis-shaped or mis-typed tensor is a
// data_error that names the tensor and the file. A corrupt or truncated file is a data_error too, never a crash:
// the header length, every offset and every size is checked against the file's size before anything is read.
// The file itself is held to what the format's reference reader (Rust's safetensors) demands: the header is one
// JSON object whose end is the header length (the writer pads it with spaces), no key appears twice, and the
// tensors tile the data section exactly: the first begins at byte 0, each begins where another ends, the last
// ends at the end of the file, with no gap, overlap or trailing byte. A header length one byte short whose
// header still parses would otherwise shift every tensor by a byte (0.5 read as 4.5e-44) without an error.
// Every check, the batch counts' signs included, runs on a copy of the data before the first value is
// written, so a refused load leaves the model as it was.
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "sinew/core/error.hpp"
#include "sinew/io/detail/json_reader.hpp"
#include "sinew/nets/state_dict.hpp"

namespace sinew::io {

static_assert(std::endian::native == std::endian::little,
              "io/safetensors.hpp reads and writes little-endian data in place; a big-endian host needs byte swaps");

/// One tensor listed in a safetensors header.
struct SafetensorsTensor {
  /// the key
  std::string name;
  std::string dtype;                 ///< "F32", "I64", "BF16", ...
  /// extents, outermost first; empty for a scalar
  std::vector<std::int64_t> shape;
  /// @{
  std::uint64_t begin = 0, end = 0;  ///< byte offsets from the start of the data
  /// @}
};

/// Bytes per element of a safetensors dtype, or 0 for one this reader does not know.
inline std::size_t dtype_size(std::string_view dtype) {
  if (dtype == "F64" || dtype == "I64" || dtype == "U64") return 8;
  if (dtype == "F32" || dtype == "I32" || dtype == "U32") return 4;
  if (dtype == "F16" || dtype == "BF16" || dtype == "I16" || dtype == "U16") return 2;
  if (dtype == "I8" || dtype == "U8" || dtype == "BOOL" || dtype == "F8_E4M3" || dtype == "F8_E5M2") return 1;
  return 0;
}

/// "[10, 512]": shapes in messages.
inline std::string shape_string(std::span<const std::int64_t> shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

/// A safetensors file whose header has been read and checked against the file's size; data is read on demand.
class SafetensorsReader {
 public:
  /// Headers larger than this are refused as corrupt (the reference implementation's limit).
  static constexpr std::uint64_t kMaxHeader = 100u << 20;

  /// Reads and checks the header of `file` (see the top of this file); throws a data_error naming the file
  /// and what is wrong.
  explicit SafetensorsReader(std::filesystem::path file) : path_(std::move(file)) {
    in_.open(path_, std::ios::binary);
    if (!in_) throw data_error("safetensors: cannot open " + path_.string() + " for reading");
    std::error_code ec;
    const std::uint64_t size = std::filesystem::file_size(path_, ec);
    if (ec) throw data_error("safetensors: cannot read the size of " + path_.string() + ": " + ec.message());
    if (size < 8)
      throw data_error("safetensors: " + path_.string() + " is " + std::to_string(size) +
                       " bytes, too short for the 8-byte header length (truncated, or not a safetensors file?)");
    unsigned char len[8];
    read_at(0, len, 8);
    std::uint64_t n = 0;
    for (int i = 7; i >= 0; --i) n = (n << 8) | len[i];
    if (n > kMaxHeader)
      throw data_error("safetensors: " + path_.string() + " declares a header of " + std::to_string(n) +
                       " bytes, more than the " + std::to_string(kMaxHeader) +
                       " a safetensors file may have (corrupt, or not a safetensors file?)");
    if (n > size - 8)
      throw data_error("safetensors: " + path_.string() + " declares a header of " + std::to_string(n) +
                       " bytes but has only " + std::to_string(size - 8) +
                       " after the header length (truncated download?)");
    std::string header(n, '\0');
    read_at(8, header.data(), n);
    data_start_ = 8 + n;
    data_size_ = size - data_start_;
    if (n == 0 || header.front() != '{')
      corrupt("it does not start with '{' right after the 8-byte header length (not a safetensors file?)");
    parse(header);
    check_tiling();
  }

  /// The file read.
  const std::filesystem::path& path() const noexcept { return path_; }
  /// Bytes after the header: exactly the sum of the tensors' sizes (the constructor checked the tiling).
  std::uint64_t data_size() const noexcept { return data_size_; }
  /// Every tensor, in the header's order.
  const std::vector<SafetensorsTensor>& tensors() const noexcept { return tensors_; }
  /// The "__metadata__" entries (text to text).
  const std::vector<std::pair<std::string, std::string>>& metadata() const noexcept { return metadata_; }

  /// The tensor called `name`, or nullptr.
  const SafetensorsTensor* find(std::string_view name) const noexcept {
    for (const auto& t : tensors_)
      if (t.name == name) return &t;
    return nullptr;
  }

  /// Reads tensor t's bytes into `out` (exactly end - begin bytes).
  void read(const SafetensorsTensor& t, std::span<std::byte> out) {
    if (out.size() != t.end - t.begin)
      throw shape_error("safetensors: reading " + t.name + " from " + path_.string() + " into " +
                        std::to_string(out.size()) + " bytes, but it has " + std::to_string(t.end - t.begin));
    read_at(data_start_ + t.begin, out.data(), out.size());
  }

  /// Reads the whole data section into `out` (data_size() bytes); tensor t lies at out[t.begin, t.end).
  void read_data(std::span<std::byte> out) {
    if (out.size() != data_size_)
      throw shape_error("safetensors: reading the data of " + path_.string() + " into " + std::to_string(out.size()) +
                        " bytes, but it has " + std::to_string(data_size_));
    read_at(data_start_, out.data(), out.size());
  }

 private:
  void read_at(std::uint64_t offset, void* dst, std::uint64_t bytes) {
    in_.clear();
    in_.seekg(std::streamoff(offset));
    in_.read(static_cast<char*>(dst), std::streamsize(bytes));
    if (!in_ || std::uint64_t(in_.gcount()) != bytes)
      throw data_error("safetensors: reading " + std::to_string(bytes) + " bytes at offset " + std::to_string(offset) +
                       " of " + path_.string() + " failed (the file changed while being read?)");
  }

  [[noreturn]] void corrupt(const std::string& what) const {
    throw data_error("safetensors: the header of " + path_.string() + " is corrupt: " + what);
  }

  void parse(std::string_view text) {
    detail::json root;
    try {
      root = detail::parse_json(text);
    } catch (const data_error& e) {
      corrupt(std::string("not valid JSON (") + e.what() + ")");
    }
    if (!root.is_object()) corrupt("the header is not a JSON object");
    for (const auto& [name, v] : root.items()) {
      if (name == "__metadata__") {
        if (!v.is_object()) corrupt("__metadata__ is not an object");
        for (const auto& [k, s] : v.items()) {
          if (!s.is_string()) corrupt("__metadata__ value " + k + " is not a string");
          metadata_.emplace_back(k, s.get<std::string>());
        }
        continue;
      }
      tensors_.push_back(tensor(name, v));
    }
  }

  /// The tensors tile [0, data_size_): sorted by offsets, each begins where the one before ends.
  void check_tiling() const {
    std::vector<const SafetensorsTensor*> order;
    order.reserve(tensors_.size());
    for (const auto& t : tensors_) order.push_back(&t);
    std::sort(order.begin(), order.end(), [](const SafetensorsTensor* a, const SafetensorsTensor* b) {
      return a->begin != b->begin ? a->begin < b->begin : a->end < b->end;
    });
    std::uint64_t next = 0;
    const SafetensorsTensor* previous = nullptr;
    const auto range = [](const SafetensorsTensor& t) {
      std::string r = "[";  // appended piece by piece: GCC 12 warns falsely (-Wrestrict) on "[" + std::string&&
      r += std::to_string(t.begin);
      r += ", ";
      r += std::to_string(t.end);
      return r + ")";
    };
    for (const SafetensorsTensor* t : order) {
      if (t->begin > next)
        corrupt(std::string("bytes [").append(std::to_string(next)).append(", ").append(std::to_string(t->begin)) +
                ") of the data belong to no tensor (a gap before " + t->name + "; the tensors must tile the data)");
      if (t->begin < next)
        corrupt("tensor " + t->name + " at bytes " + range(*t) + " of the data overlaps " + previous->name + " at " +
                range(*previous) + " (the tensors must tile the data)");
      next = t->end;
      previous = t;
    }
    if (next != data_size_)
      corrupt("the data section has " + std::to_string(data_size_ - next) + " bytes after the end of the last tensor" +
              (previous ? ", " + previous->name + "," : "") +
              " (a header length too short for its header, or bytes appended to the file?)");
  }

  SafetensorsTensor tensor(const std::string& name, const detail::json& v) const {
    SafetensorsTensor t{name, {}, {}, 0, 0};
    const auto* dtype = detail::member(v, "dtype");
    const auto* shape = detail::member(v, "shape");
    const auto* offsets = detail::member(v, "data_offsets");
    if (!dtype || !dtype->is_string() || !shape || !shape->is_array() || !offsets || !offsets->is_array() ||
        offsets->size() != 2)
      corrupt("tensor " + name + " lacks a string \"dtype\", an array \"shape\" or a pair \"data_offsets\"");
    t.dtype = dtype->get<std::string>();
    const std::size_t element = dtype_size(t.dtype);
    if (element == 0) corrupt("tensor " + name + " has the unknown dtype " + t.dtype);
    // The element count, guarded against overflow: each extent and the product stay below the data size.
    std::uint64_t count = 1;
    for (const auto& e : *shape) {
      std::uint64_t x = 0;
      if (!detail::to_u64(e, x) || x > (std::uint64_t(1) << 62)) corrupt("tensor " + name + " has an invalid extent in its shape");
      t.shape.push_back(std::int64_t(x));
      if (x != 0 && count > data_size_ / x) count = data_size_ + 1;  // larger than the file can hold
      else count *= x;
    }
    if (!detail::to_u64((*offsets)[0], t.begin) || !detail::to_u64((*offsets)[1], t.end))
      corrupt("tensor " + name + " has data_offsets that are not non-negative integers");
    if (t.begin > t.end) corrupt("tensor " + name + " has data_offsets that end before they begin");
    if (t.end > data_size_)
      throw data_error("safetensors: tensor " + name + " in " + path_.string() + " ends at byte " +
                       std::to_string(t.end) + " of the data, but the file holds only " + std::to_string(data_size_) +
                       " bytes of data (truncated download?)");
    if (count > data_size_ || t.end - t.begin != count * element)
      corrupt("tensor " + name + " has " + std::to_string(t.end - t.begin) + " bytes of data but its shape " +
              shape_string(t.shape) + " of " + t.dtype + " needs " +
              (count > data_size_ ? std::string("more than the file holds") : std::to_string(count * element)));
    return t;
  }

  std::filesystem::path path_;
  std::ifstream in_;
  std::uint64_t data_start_ = 0, data_size_ = 0;
  std::vector<SafetensorsTensor> tensors_;
  std::vector<std::pair<std::string, std::string>> metadata_;
};

/// A tensor to write: its bytes are written as they lie (little-endian).
struct TensorRef {
  /// the key
  std::string name;
  /// "F32", "I64", ...
  std::string dtype;
  /// extents, outermost first
  std::vector<std::int64_t> shape;
  /// the data: product of the extents x the dtype's size bytes, little-endian
  std::span<const std::byte> bytes;
};

/// Writes `tensors` (in this order) and `metadata` to `file`, through a temporary file renamed at the end,
/// so that a failed write never leaves a half-written file under the name.
inline void write_safetensors(const std::filesystem::path& file, std::span<const TensorRef> tensors,
                              std::span<const std::pair<std::string, std::string>> metadata = {}) {
  detail::json root = detail::json::object();
  if (!metadata.empty()) {
    auto& m = root["__metadata__"] = detail::json::object();
    for (const auto& [k, v] : metadata) m[k] = v;
  }
  std::uint64_t offset = 0;
  for (const TensorRef& t : tensors) {
    const std::uint64_t end = offset + t.bytes.size();
    if (root.contains(t.name))
      throw error("safetensors: cannot write " + file.string() + ": two tensors are named " + t.name);
    root[t.name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {offset, end}}};
    offset = end;
  }
  std::string header;
  try {
    header = root.dump();
  } catch (const detail::json::type_error& e) {
    throw error("safetensors: cannot write " + file.string() + ": a tensor name or metadata string is not UTF-8 (" +
                e.what() + ")");
  }
  header.append((8 - header.size() % 8) % 8, ' ');  // the data starts 8-byte aligned, as the reference writer pads

  std::error_code ec;
  if (std::filesystem::is_directory(file, ec))
    throw error("safetensors: " + file.string() + " is a directory; pass the name of a file to write, such as " +
                (file / "model.safetensors").string());
  const std::filesystem::path tmp = file.string() + ".tmp";
  // Removes the temporary file on every way out but the rename that succeeded (an exception included).
  struct remove_unless_renamed {
    const std::filesystem::path& tmp;
    bool renamed = false;
    ~remove_unless_renamed() {
      std::error_code ignored;
      if (!renamed) std::filesystem::remove(tmp, ignored);
    }
  };
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw error("safetensors: cannot open " + tmp.string() + " for writing (does its directory exist?)");
    remove_unless_renamed guard{tmp};
    unsigned char len[8];
    for (int i = 0; i < 8; ++i) len[i] = static_cast<unsigned char>(std::uint64_t(header.size()) >> (8 * i));
    out.write(reinterpret_cast<const char*>(len), 8);
    out.write(header.data(), std::streamsize(header.size()));
    for (const TensorRef& t : tensors) out.write(reinterpret_cast<const char*>(t.bytes.data()), std::streamsize(t.bytes.size()));
    out.close();
    if (!out) throw error("safetensors: writing " + tmp.string() + " failed (disk full?)");
    std::filesystem::rename(tmp, file, ec);
    if (ec) throw error("safetensors: cannot rename " + tmp.string() + " to " + file.string() + ": " + ec.message());
    guard.renamed = true;
  }
}

namespace detail {
template <class Net>
void check_spans(const char* what, std::size_t params, std::size_t buffers) {
  if (params < Net::kParamSpan || buffers < Net::kBufferSpan)
    throw shape_error(std::string("safetensors: ") + what + " got " + std::to_string(params) + " parameter and " +
                      std::to_string(buffers) + " buffer floats, but the network needs " +
                      std::to_string(Net::kParamSpan) + " and " + std::to_string(Net::kBufferSpan));
}

inline std::string name_list(const std::vector<std::string>& names) {
  std::string s;
  const std::size_t shown = std::min<std::size_t>(names.size(), 5);
  for (std::size_t i = 0; i < shown; ++i) {
    if (i) s += ", ";
    s += names[i];
  }
  if (names.size() > shown) s += " and " + std::to_string(names.size() - shown) + " more";
  return s;
}
}  // namespace detail

/// Writes Net's state_dict from the flat `parameters` and `buffers` (a Model's parameters() and buffers());
/// every BatchNorm's num_batches_tracked is `batches_tracked`.
template <NamedNetwork Net>
void save_safetensors(const std::filesystem::path& file, std::span<const float> parameters,
                      std::span<const float> buffers, std::uint64_t batches_tracked = 0) {
  detail::check_spans<Net>("save", parameters.size(), buffers.size());
  const std::int64_t count = std::int64_t(batches_tracked);
  std::vector<TensorRef> refs;
  for (const StateEntry& e : state_dict_entries<Net>()) {
    std::span<const std::byte> bytes;
    if (e.source == StateSource::batches_tracked)
      bytes = std::as_bytes(std::span(&count, 1));
    else
      bytes = std::as_bytes((e.is_parameter() ? parameters : buffers).subspan(e.offset, e.size()));
    refs.push_back({e.key, e.source == StateSource::batches_tracked ? "I64" : "F32", e.shape(), bytes});
  }
  const std::pair<std::string, std::string> metadata[] = {{"format", "pt"}};
  write_safetensors(file, refs, metadata);
}

/// Reads Net's state_dict from `file` into the flat `parameters` and `buffers`, strictly (see the top of this
/// file). Returns the largest num_batches_tracked in the file, or nothing for a network without BatchNorm.
template <NamedNetwork Net>
std::optional<std::uint64_t> load_safetensors(const std::filesystem::path& file, std::span<float> parameters,
                                              std::span<float> buffers) {
  detail::check_spans<Net>("load", parameters.size(), buffers.size());
  SafetensorsReader reader(file);
  const auto& entries = state_dict_entries<Net>();
  const std::string where = " in " + file.string();

  // Every check first, so that a file that does not fit leaves the model as it was.
  std::vector<std::string> missing, extra;
  std::vector<const SafetensorsTensor*> found;
  for (const StateEntry& e : entries) {
    const SafetensorsTensor* t = reader.find(e.key);
    found.push_back(t);
    if (!t) {
      missing.push_back(e.key);
      continue;
    }
    const char* want = e.source == StateSource::batches_tracked ? "I64" : "F32";
    if (t->dtype != want)
      throw data_error("safetensors: tensor " + e.key + where + " is " + t->dtype + ", but the network keeps it as " +
                       want + (e.source == StateSource::batches_tracked ? "" : " (convert the file to float32)"));
    if (t->shape != e.shape())
      throw data_error("safetensors: tensor " + e.key + where + " has shape " + shape_string(t->shape) +
                       ", but the network's has " + shape_string(e.shape()) +
                       " (a different input size, class count or network?)");
  }
  for (const SafetensorsTensor& t : reader.tensors())
    if (std::none_of(entries.begin(), entries.end(), [&](const StateEntry& e) { return e.key == t.name; }))
      extra.push_back(t.name);
  if (!missing.empty())
    throw data_error("safetensors: " + file.string() + " lacks " + std::to_string(missing.size()) +
                     (missing.size() == 1 ? " tensor" : " tensors") + " that the network has: " +
                     detail::name_list(missing) + (extra.empty() ? "" : "; it has instead " + detail::name_list(extra)));
  if (!extra.empty())
    throw data_error("safetensors: " + file.string() + " has " + std::to_string(extra.size()) +
                     (extra.size() == 1 ? " tensor" : " tensors") + " that the network does not have: " +
                     detail::name_list(extra) + " (a file of a different network?)");

  // The tensors tile the data and are exactly the network's, so the data is the network's size: read it whole,
  // check what remains to check, and only then write.
  std::vector<std::byte> data(reader.data_size());
  reader.read_data(data);
  const auto bytes_of = [&](const SafetensorsTensor& t) {
    return std::span<const std::byte>(data).subspan(t.begin, t.end - t.begin);
  };
  std::optional<std::uint64_t> batches;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    if (entries[i].source != StateSource::batches_tracked) continue;
    std::int64_t n = 0;
    std::memcpy(&n, bytes_of(*found[i]).data(), sizeof n);
    if (n < 0)
      throw data_error("safetensors: tensor " + entries[i].key + where + " counts " + std::to_string(n) +
                       " batches; a count cannot be negative");
    batches = std::max(batches.value_or(0), std::uint64_t(n));
  }
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const StateEntry& e = entries[i];
    if (e.source == StateSource::batches_tracked) continue;
    const auto from = bytes_of(*found[i]);
    std::memcpy((e.is_parameter() ? parameters : buffers).subspan(e.offset, e.size()).data(), from.data(), from.size());
  }
  return batches;
}

/// A Model: its network type, flat parameters and buffers, and its step count.
template <class M>
concept SavableModel = requires(M& m, const M& cm) {
  typename M::network;
  { cm.parameters() } -> std::convertible_to<std::span<const float>>;
  { cm.buffers() } -> std::convertible_to<std::span<const float>>;
  { m.parameters() } -> std::convertible_to<std::span<float>>;
  { m.buffers() } -> std::convertible_to<std::span<float>>;
  { cm.step() } -> std::convertible_to<std::uint64_t>;
  m.set_step(std::uint64_t{});
};

/// Writes the model's state_dict (num_batches_tracked = model.step()).
template <SavableModel M>
void save_safetensors(const M& model, const std::filesystem::path& file) {
  save_safetensors<typename M::network>(file, model.parameters(), model.buffers(), model.step());
}

/// Reads the model's state_dict; model.step() becomes the file's num_batches_tracked where it has one.
template <SavableModel M>
void load_safetensors(M& model, const std::filesystem::path& file) {
  if (const auto batches = load_safetensors<typename M::network>(file, model.parameters(), model.buffers()))
    model.set_step(*batches);
}

}  // namespace sinew::io
