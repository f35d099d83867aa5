// Weights in and out as safetensors: state_dict names, the file layout, round trips, and every way a file can
// fail to fit (each error names the tensor and the file) or be corrupt (an error, never a crash).
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <algorithm>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <type_traits>
#include <vector>

#include "sinew/core/rng.hpp"
#include "sinew/io.hpp"
#include "sinew/nets.hpp"

namespace {
using namespace sinew;
namespace fs = std::filesystem;

// A net with every naming construct: Named layers, a Module of anonymous blocks, a Residual whose shortcut
// projects (downsample.0/.1), and positional names at the top.
using Block = Module<"", Residual<Chain<Named<"conv", Conv2d<8, 3, 2, 1, false>>, Named<"bn", BatchNorm2d>>,
                                  ProjectIfNeeded<8, 2>>,
                     ReLU>;
using Small = Sequential<Input<3, 8, 8>, Named<"stem", Conv2d<4, 3, 1, 1, false>>, Named<"bn", BatchNorm2d>, ReLU,
                         Module<"blocks", Block>, GlobalAvgPool, Flatten, Dense<5>>;

/// A file name of its own for each test (ctest runs them as parallel processes).
fs::path temp_file(const std::string& suffix = "") {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  const fs::path dir = fs::temp_directory_path() / "sinew_test_io";
  fs::create_directories(dir);
  return dir / (std::string(info->name()) + suffix + ".safetensors");
}

/// Parameters and buffers of a network, filled with distinct values.
template <class Net>
struct State {
  std::vector<float> params = std::vector<float>(Net::kParamSpan), buffers = std::vector<float>(Net::kBufferSpan);
  void randomize(std::uint64_t seed) {
    Rng rng(seed);
    for (float& v : params) v = rng.normal();
    for (float& v : buffers) v = rng.uniform(0.5f, 1.5f);
  }
  /// Whether every tensor (padding aside) equals other's.
  bool same_tensors(const State& other) const {
    for (const auto& e : state_dict_entries<Net>()) {
      if (e.source == StateSource::batches_tracked) continue;
      const auto& x = e.is_parameter() ? params : buffers;
      const auto& y = e.is_parameter() ? other.params : other.buffers;
      if (!std::equal(x.begin() + std::ptrdiff_t(e.offset), x.begin() + std::ptrdiff_t(e.offset + e.size()),
                      y.begin() + std::ptrdiff_t(e.offset)))
        return false;
    }
    return true;
  }
  void save(const fs::path& file, std::uint64_t batches = 0) const {
    io::save_safetensors<Net>(file, params, buffers, batches);
  }
  std::optional<std::uint64_t> load(const fs::path& file) { return io::load_safetensors<Net>(file, params, buffers); }
};

/// Every tensor of a file with its bytes, to rewrite it with one thing changed.
struct Blob {
  std::string name, dtype;
  std::vector<std::int64_t> shape;
  std::vector<std::byte> bytes;
};
std::vector<Blob> read_blobs(const fs::path& file) {
  io::SafetensorsReader r(file);
  std::vector<Blob> out;
  for (const auto& t : r.tensors()) {
    Blob b{t.name, t.dtype, t.shape, std::vector<std::byte>(t.end - t.begin)};
    r.read(t, b.bytes);
    out.push_back(std::move(b));
  }
  return out;
}
void write_blobs(const fs::path& file, const std::vector<Blob>& blobs) {
  std::vector<io::TensorRef> refs;
  for (const Blob& b : blobs) refs.push_back({b.name, b.dtype, b.shape, b.bytes});
  io::write_safetensors(file, refs);
}
Blob* find(std::vector<Blob>& blobs, std::string_view name) {
  for (Blob& b : blobs)
    if (b.name == name) return &b;
  return nullptr;
}

std::vector<char> read_bytes(const fs::path& file) {
  std::ifstream f(file, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), {}};
}
void write_bytes(const fs::path& file, const std::vector<char>& bytes) {
  std::ofstream f(file, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), std::streamsize(bytes.size()));
}

/// The 8-byte little-endian length of `header`, then `header` (and whatever follows it in the string).
std::vector<char> with_length(const std::string& header_and_data, std::size_t header_size = std::string::npos) {
  const std::uint64_t n = std::min(header_size, header_and_data.size());
  std::vector<char> out;
  for (int i = 0; i < 8; ++i) out.push_back(char((n >> (8 * i)) & 0xff));
  for (char c : header_and_data) out.push_back(c);
  return out;
}

/// Runs `load` and expects a data_error whose message holds every one of `parts`.
template <class F>
void expect_data_error(F load, std::initializer_list<std::string> parts) {
  try {
    load();
    ADD_FAILURE() << "no error; expected one mentioning " << *parts.begin();
  } catch (const data_error& e) {
    for (const auto& p : parts) EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
  }
}

std::vector<std::string> keys_of(const std::vector<StateEntry>& entries) {
  std::vector<std::string> keys;
  for (const auto& e : entries) keys.push_back(e.key);
  return keys;
}

TEST(state_dict, names_come_from_named_module_and_positions) {
  const std::vector<std::string> want = {
      "stem.weight",
      "bn.weight", "bn.bias", "bn.running_mean", "bn.running_var", "bn.num_batches_tracked",
      "blocks.0.conv.weight",
      "blocks.0.bn.weight", "blocks.0.bn.bias", "blocks.0.bn.running_mean", "blocks.0.bn.running_var",
      "blocks.0.bn.num_batches_tracked",
      "blocks.0.downsample.0.weight",
      "blocks.0.downsample.1.weight", "blocks.0.downsample.1.bias", "blocks.0.downsample.1.running_mean",
      "blocks.0.downsample.1.running_var", "blocks.0.downsample.1.num_batches_tracked",
      "6.weight", "6.bias"};  // Dense is at position 6 of the top: stem, bn, relu, blocks, pool, flatten, dense
  const auto& entries = state_dict_entries<Small>();
  EXPECT_EQ(keys_of(entries), want);
  EXPECT_EQ(entries[0].shape(), (std::vector<std::int64_t>{4, 3, 3, 3}));
  EXPECT_EQ(entries[12].shape(), (std::vector<std::int64_t>{8, 4, 1, 1}));
  EXPECT_EQ(entries.back().shape(), (std::vector<std::int64_t>{5}));
  EXPECT_EQ(entries[5].rank, 0) << "num_batches_tracked is a scalar";
}

TEST(state_dict, tensors_tile_the_flat_buffers_without_overlap) {
  // Every parameter float belongs to exactly one tensor (padding aside), and every buffer float too.
  const auto& entries = state_dict_entries<nets::ResNet18<Input<3, 32, 32>, 10>>();
  std::vector<int> params(nets::ResNet18<Input<3, 32, 32>, 10>::kParamSpan), buffers(
                                                                                 nets::ResNet18<Input<3, 32, 32>, 10>::kBufferSpan);
  std::size_t total = 0;
  for (const auto& e : entries) {
    if (e.source == StateSource::batches_tracked) continue;
    auto& used = e.is_parameter() ? params : buffers;
    ASSERT_LE(e.offset + e.size(), used.size()) << e.key;
    for (std::size_t i = 0; i < e.size(); ++i) ++used[e.offset + i];
    if (e.is_parameter()) total += e.size();
  }
  for (int u : params) ASSERT_LE(u, 1);
  for (int u : buffers) ASSERT_LE(u, 1);
  EXPECT_EQ(total, 11181642u) << "torchvision's resnet18(num_classes=10) parameter count";
}

// Two layers under one key do not compile (tests/compile_fail/state_dict_key_clash.cpp); the check that
// finds them must also let every distinct naming through, and find a clash where there is one.
static_assert(detail::clashing_key<Small>().size == 0);
static_assert(detail::clashing_key<nets::ResNet50<>>().size == 0);
static_assert(detail::clashing_key<Sequential<Input<1, 4, 4>, Flatten, Named<"fc", Dense<3>>, Named<"fc", Dense<2>>>>()
                  .view() == "fc.bias");  // the first clash in sorted order

TEST(safetensors, round_trip_restores_every_tensor_and_the_batch_count) {
  const fs::path file = temp_file();
  State<Small> a, b;
  a.randomize(1);
  a.save(file, 7);
  const auto batches = b.load(file);
  ASSERT_TRUE(batches.has_value());
  EXPECT_EQ(*batches, 7u);
  EXPECT_TRUE(a.same_tensors(b));
  b.params[state_dict_entries<Small>().back().offset] += 1;  // the comparison can fail
  EXPECT_FALSE(a.same_tensors(b));
}

// SyncBatchNorm2d keeps BatchNorm2d's keys and layout (as PyTorch's SyncBatchNorm), so weights move both ways
// between a network and its ConvertSyncBatchNorm, and so between it and torchvision.
TEST(safetensors, a_batch_norm2d_file_loads_into_its_sync_batch_norm_network_and_back) {
  using Synced = ConvertSyncBatchNorm<Small>;
  static_assert(!std::is_same_v<Synced, Small>);
  static_assert(Synced::kParamSpan == Small::kParamSpan && Synced::kBufferSpan == Small::kBufferSpan);
  EXPECT_EQ(keys_of(state_dict_entries<Synced>()), keys_of(state_dict_entries<Small>()));
  const fs::path file = temp_file(), back = temp_file("_back");
  State<Small> plain, plain_again;
  State<Synced> synced;
  plain.randomize(3);
  plain.save(file, 5);
  ASSERT_EQ(synced.load(file), std::optional<std::uint64_t>(5));
  State<Synced> expected;  // the same floats, seen through the synced network's entries
  expected.params = plain.params, expected.buffers = plain.buffers;
  EXPECT_TRUE(synced.same_tensors(expected));
  synced.save(back, 5);
  ASSERT_EQ(plain_again.load(back), std::optional<std::uint64_t>(5));
  EXPECT_TRUE(plain.same_tensors(plain_again));
}

TEST(safetensors, a_network_without_batch_norm_has_no_batch_count) {
  const fs::path file = temp_file();
  State<nets::LeNet5<>> a, b;
  a.randomize(2);
  a.save(file);
  EXPECT_FALSE(b.load(file).has_value());
  EXPECT_TRUE(a.same_tensors(b));
}

TEST(safetensors, the_file_has_hugging_face_layout) {
  const fs::path file = temp_file();
  State<Small> a;
  a.randomize(3);
  a.save(file, 5);
  const std::vector<char> bytes = read_bytes(file);
  std::uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);  // little-endian host (static_assert in the header)
  ASSERT_LE(8 + n, bytes.size());
  EXPECT_EQ(n % 8, 0u) << "the data starts 8-byte aligned";
  const std::string header(bytes.data() + 8, n);
  EXPECT_EQ(header.front(), '{');
  EXPECT_NE(header.find("\"__metadata__\":{\"format\":\"pt\"}"), std::string::npos) << header;
  EXPECT_NE(header.find("\"bn.num_batches_tracked\":{\"dtype\":\"I64\",\"shape\":[]"), std::string::npos);

  io::SafetensorsReader r(file);
  std::uint64_t next = 0;
  for (const auto& t : r.tensors()) {
    EXPECT_EQ(t.begin, next) << t.name << ": tensors follow each other";
    next = t.end;
  }
  EXPECT_EQ(8 + n + next, bytes.size()) << "nothing after the last tensor";
  // The last tensor is 6.bias: five floats, as they lie in the parameters.
  const auto& e = state_dict_entries<Small>().back();
  EXPECT_EQ(std::memcmp(bytes.data() + 8 + n + r.tensors().back().begin, a.params.data() + e.offset, 5 * sizeof(float)), 0);
  // num_batches_tracked is an int64 5.
  const auto* count = r.find("bn.num_batches_tracked");
  ASSERT_NE(count, nullptr);
  std::int64_t c = 0;
  std::memcpy(&c, bytes.data() + 8 + n + count->begin, 8);
  EXPECT_EQ(c, 5);
}

TEST(safetensors, a_missing_tensor_is_named_and_the_model_is_left_as_it_was) {
  const fs::path file = temp_file();
  State<Small> a, b;
  a.randomize(4);
  a.save(file);
  auto blobs = read_blobs(file);
  std::erase_if(blobs, [](const Blob& x) { return x.name == "blocks.0.bn.running_var"; });
  write_blobs(file, blobs);
  b.randomize(5);
  const auto before = b.params;
  expect_data_error([&] { b.load(file); }, {"blocks.0.bn.running_var", file.string(), "lacks 1 tensor"});
  EXPECT_EQ(b.params, before);
}

TEST(safetensors, an_extra_tensor_is_named) {
  const fs::path file = temp_file();
  State<Small> a;
  a.save(file);
  auto blobs = read_blobs(file);
  blobs.push_back({"head.weight", "F32", {2}, std::vector<std::byte>(8)});
  write_blobs(file, blobs);
  expect_data_error([&] { a.load(file); }, {"head.weight", file.string(), "does not have"});
}

TEST(safetensors, a_tensor_of_another_shape_is_named_with_both_shapes) {
  const fs::path file = temp_file();
  State<Small> a;
  a.save(file);
  auto blobs = read_blobs(file);
  find(blobs, "6.weight")->shape = {8, 5};  // the same 40 floats, transposed
  write_blobs(file, blobs);
  expect_data_error([&] { a.load(file); }, {"6.weight", file.string(), "[8, 5]", "[5, 8]"});
}

TEST(safetensors, a_tensor_of_another_dtype_is_named) {
  const fs::path file = temp_file();
  State<Small> a;
  a.save(file);
  auto blobs = read_blobs(file);
  Blob& w = *find(blobs, "stem.weight");
  w.dtype = "F64";
  w.bytes.resize(w.bytes.size() * 2);
  write_blobs(file, blobs);
  expect_data_error([&] { a.load(file); }, {"stem.weight", file.string(), "F64", "F32"});
}

TEST(safetensors, a_batch_count_that_is_not_int64_is_named) {
  const fs::path file = temp_file();
  State<Small> a;
  a.save(file);
  auto blobs = read_blobs(file);
  Blob& c = *find(blobs, "blocks.0.downsample.1.num_batches_tracked");
  c.dtype = "F32";
  c.bytes.resize(4);
  write_blobs(file, blobs);
  expect_data_error([&] { a.load(file); }, {"blocks.0.downsample.1.num_batches_tracked", file.string(), "I64"});
}

TEST(safetensors, a_negative_batch_count_is_named) {
  const fs::path file = temp_file();
  State<Small> a;
  a.save(file);
  auto blobs = read_blobs(file);
  const std::int64_t minus = -3;
  std::memcpy(find(blobs, "bn.num_batches_tracked")->bytes.data(), &minus, 8);
  write_blobs(file, blobs);
  expect_data_error([&] { a.load(file); }, {"bn.num_batches_tracked", file.string(), "negative"});
}

TEST(safetensors, a_missing_file_is_named) {
  State<Small> a;
  expect_data_error([&] { a.load("/nonexistent/weights.safetensors"); }, {"/nonexistent/weights.safetensors"});
}

TEST(safetensors, files_shorter_than_the_header_length_are_refused) {
  const fs::path file = temp_file();
  State<Small> a;
  write_bytes(file, {});
  expect_data_error([&] { a.load(file); }, {file.string(), "is 0 bytes"});
  write_bytes(file, {1, 2, 3, 4, 5, 6, 7});
  expect_data_error([&] { a.load(file); }, {file.string(), "is 7 bytes"});
}

TEST(safetensors, an_absurd_or_overlong_header_length_is_refused) {
  const fs::path file = temp_file();
  State<Small> a;
  std::vector<char> bytes = {-1, -1, -1, -1, -1, -1, -1, -1, '{', '}'};  // a length of 2^64 - 1
  write_bytes(file, bytes);
  expect_data_error([&] { a.load(file); }, {file.string(), "declares a header of 18446744073709551615 bytes"});
  bytes = {100, 0, 0, 0, 0, 0, 0, 0, '{', '}'};
  write_bytes(file, bytes);
  expect_data_error([&] { a.load(file); }, {file.string(), "declares a header of 100 bytes but has only 2"});
}

TEST(safetensors, a_header_that_is_not_json_is_refused) {
  const fs::path file = temp_file();
  State<Small> a;
  for (const std::string& header :
       {std::string("{\"a\":"), std::string("[1,2]"), std::string("{\"x\":{\"dtype\":\"F32\"}}"), std::string(200, '[')}) {
    write_bytes(file, with_length(header));
    expect_data_error([&] { a.load(file); }, {file.string(), "corrupt"});
  }
}

TEST(safetensors, truncated_data_names_the_tensor_that_runs_past_the_end) {
  const fs::path file = temp_file();
  State<Small> a;
  a.save(file);
  std::vector<char> bytes = read_bytes(file);
  bytes.resize(bytes.size() - 4);  // the last float of 6.bias
  write_bytes(file, bytes);
  expect_data_error([&] { a.load(file); }, {"6.bias", file.string(), "truncated"});
}

TEST(safetensors, offsets_past_2_to_the_53_are_read_exactly) {
  // 2^53 + 1 has no double: a reader going through one would name 9007199254740992 or ...96.
  const fs::path file = temp_file();
  const std::string header = R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[9007199254740993,9007199254740997]}})";
  std::vector<char> bytes;
  for (int i = 0; i < 8; ++i) bytes.push_back(char((header.size() >> (8 * i)) & 0xff));
  bytes.insert(bytes.end(), header.begin(), header.end());
  bytes.resize(bytes.size() + 4);
  write_bytes(file, bytes);
  expect_data_error([&] { io::SafetensorsReader r(file); }, {"tensor w", "ends at byte 9007199254740997 of the data"});

  std::uint64_t x = 0;
  const auto doc = io::detail::parse_json("[9007199254740993, 18446744073709551615, 18446744073709551616, -1, 1.0]");
  ASSERT_TRUE(io::detail::to_u64(doc[0], x));
  EXPECT_EQ(x, (std::uint64_t(1) << 53) + 1);
  ASSERT_TRUE(io::detail::to_u64(doc[1], x));
  EXPECT_EQ(x, ~std::uint64_t(0));
  EXPECT_FALSE(io::detail::to_u64(doc[2], x));  // past 64 bits
  EXPECT_FALSE(io::detail::to_u64(doc[3], x));
  EXPECT_FALSE(io::detail::to_u64(doc[4], x));  // a float, even a whole one
  // ... and written exactly: a checkpoint manifest's step and seed round-trip through its JSON.
  io::CheckpointManifest m;
  m.step = (std::uint64_t(1) << 53) + 1;
  m.seed = ~std::uint64_t(0);
  const std::string text = io::manifest_json(m);
  EXPECT_NE(text.find("9007199254740993"), std::string::npos) << text;
  const io::CheckpointManifest back = io::parse_manifest(text, "test/checkpoint.json");
  EXPECT_EQ(back.step, m.step);
  EXPECT_EQ(back.seed, m.seed);
}

TEST(safetensors, a_deeply_nested_or_duplicated_header_is_refused_with_a_sentence) {
  expect_data_error([] { io::detail::parse_json(std::string(65, '[') + std::string(65, ']')); },
                    {"nested deeper than 64 levels"});
  expect_data_error([] { io::detail::parse_json(R"({"a":{"b":1,"b":2}})"); }, {"\"b\" appears twice"});
  io::detail::parse_json(R"({"a":{"b":1},"c":{"b":2}})");  // the same key in two objects is fine
  expect_data_error([] { io::detail::parse_json(R"({"a":tru})"); }, {"line 1, column"});
  // A number past the double range is nlohmann's out_of_range, not a parse_error: still a sentence.
  expect_data_error([] { io::detail::parse_json(R"({"data_offsets":[0,1e400]})"); }, {"number overflow", "1e400"});
}

TEST(safetensors, offsets_that_disagree_with_the_shape_name_the_tensor) {
  const fs::path file = temp_file();
  State<Small> a;
  a.save(file);
  std::vector<char> bytes = read_bytes(file);
  std::uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  std::string header(bytes.data() + 8, n);
  // Claim a huge shape for stem.weight: the element count must not overflow into a small number.
  const std::string from = "\"stem.weight\":{\"dtype\":\"F32\",\"shape\":[4,3,3,3]";
  const std::string to = "\"stem.weight\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296,16,1]";
  const auto at = header.find(from);
  ASSERT_NE(at, std::string::npos) << header;
  header.replace(at, from.size(), to);
  write_bytes(file, with_length(header + std::string(bytes.begin() + std::ptrdiff_t(8 + n), bytes.end()), header.size()));
  expect_data_error([&] { a.load(file); }, {"stem.weight", file.string(), "shape"});
}

TEST(safetensors, every_truncation_of_a_file_is_an_error_not_a_crash) {
  const fs::path file = temp_file(), cut = temp_file("_cut");
  State<Small> a;
  a.save(file);
  const std::vector<char> bytes = read_bytes(file);
  for (std::size_t size = 0; size < bytes.size(); ++size) {
    write_bytes(cut, {bytes.begin(), bytes.begin() + std::ptrdiff_t(size)});
    EXPECT_THROW(a.load(cut), data_error) << "cut at " << size << " of " << bytes.size() << " bytes";
  }
}

TEST(safetensors, flipped_header_bytes_are_an_error_or_harmless_never_a_crash) {
  const fs::path file = temp_file(), bad = temp_file("_bad");
  State<Small> a;
  a.save(file);
  const std::vector<char> bytes = read_bytes(file);
  std::uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  Rng rng(7);
  int errors = 0;
  for (int trial = 0; trial < 300; ++trial) {
    std::vector<char> b = bytes;
    const std::size_t at = rng.below(8 + n);
    b[at] = char(b[at] ^ char(1 + rng.below(255)));
    write_bytes(bad, b);
    try {
      a.load(bad);  // a flip inside a number's digits of equal length may leave a valid, fitting file
    } catch (const error&) {
      ++errors;
    }
  }
  EXPECT_GT(errors, 200) << "most flips break the header or its fit to the network";
}

/// What io::save_safetensors(model, file) needs of a Model, with the step it keeps.
struct FakeModel {
  using network = Small;
  State<Small> state;
  std::uint64_t steps = 0;
  std::span<float> parameters() { return state.params; }
  std::span<const float> parameters() const { return state.params; }
  std::span<float> buffers() { return state.buffers; }
  std::span<const float> buffers() const { return state.buffers; }
  std::uint64_t step() const { return steps; }
  void set_step(std::uint64_t s) { steps = s; }
};
static_assert(io::SavableModel<FakeModel>);

// The format's own rules (Rust safetensors' reader): tensors tile the data, keys are unique, the header length
// ends the JSON. Each hostile file is built by hand from a valid one's tensors.

/// A safetensors file written by hand: `header` as it stands (its length declared as `declared`, or its
/// size), then `data`.
void write_raw(const fs::path& file, const std::string& header, const std::vector<std::byte>& data,
               std::uint64_t declared = ~std::uint64_t(0)) {
  const std::uint64_t n = declared == ~std::uint64_t(0) ? header.size() : declared;
  std::vector<char> bytes;
  for (int i = 0; i < 8; ++i) bytes.push_back(char((n >> (8 * i)) & 0xff));
  bytes.insert(bytes.end(), header.begin(), header.end());
  for (std::byte b : data) bytes.push_back(char(b));
  write_bytes(file, bytes);
}

/// The header entry of blob b at data bytes [begin, end).
std::string entry(const Blob& b, std::uint64_t begin, std::uint64_t end) {
  std::string shape;
  for (std::size_t d = 0; d < b.shape.size(); ++d) {
    if (d) shape += ',';
    shape += std::to_string(b.shape[d]);
  }
  return "\"" + b.name + "\":{\"dtype\":\"" + b.dtype + "\",\"shape\":[" + shape + "],\"data_offsets\":[" +
         std::to_string(begin) + "," + std::to_string(end) + "]}";
}

/// The hostile variants of one valid file of Small, each with the words its error must hold.
struct Hostile {
  std::string what;
  std::function<void(const fs::path&, const std::vector<Blob>&)> write;
  std::vector<std::string> message;
};

/// Header and data of `blobs` laid out as the writer does, with `gap` zero bytes inserted before tensor `at`.
std::pair<std::string, std::vector<std::byte>> layout(const std::vector<Blob>& blobs, std::size_t at = SIZE_MAX,
                                                      std::size_t gap = 0) {
  std::string header = "{";
  std::vector<std::byte> data;
  for (std::size_t i = 0; i < blobs.size(); ++i) {
    if (i == at) data.resize(data.size() + gap);
    if (i) header += ',';
    header += entry(blobs[i], data.size(), data.size() + blobs[i].bytes.size());
    data.insert(data.end(), blobs[i].bytes.begin(), blobs[i].bytes.end());
  }
  return {header + "}", data};
}

std::vector<Hostile> hostile_files() {
  std::vector<Hostile> h;
  h.push_back({"header length one byte short, the JSON still whole (padding)",
               [](const fs::path& f, const std::vector<Blob>& b) {
                 auto [header, data] = layout(b);
                 write_raw(f, header + "  ", data, header.size() + 1);  // the second space becomes data byte 0
               },
               {"1 bytes after the end of the last tensor", "header length too short"}});
  h.push_back({"header length four bytes long: data bytes inside the JSON",
               [](const fs::path& f, const std::vector<Blob>& b) {
                 auto [header, data] = layout(b);
                 write_raw(f, header, data, header.size() + 4);
               },
               {"not valid JSON"}});
  h.push_back({"a gap of 4 bytes before the third tensor",
               [](const fs::path& f, const std::vector<Blob>& b) {
                 auto [header, data] = layout(b, 2, 4);
                 write_raw(f, header, data);
               },
               {"belong to no tensor", "a gap before bn.bias"}});
  h.push_back({"two tensors on the same bytes",
               [](const fs::path& f, const std::vector<Blob>& b) {
                 // bn.running_mean and bn.running_var (4 floats each) both at running_mean's bytes; the data
                 // then has 16 bytes fewer, so the file is as long as the tensors claim.
                 auto [header, data] = layout(b);
                 const std::size_t mean = 3, var = 4;
                 std::uint64_t begin = 0;
                 for (std::size_t i = 0; i < mean; ++i) begin += b[i].bytes.size();
                 std::string rebuilt = "{";
                 std::vector<std::byte> d;
                 for (std::size_t i = 0; i < b.size(); ++i) {
                   const std::uint64_t at = i == var ? begin : d.size();
                   if (i) rebuilt += ',';
                   rebuilt += entry(b[i], at, at + b[i].bytes.size());
                   if (i != var) d.insert(d.end(), b[i].bytes.begin(), b[i].bytes.end());
                 }
                 write_raw(f, rebuilt + "}", d);
               },
               {"overlaps", "bn.running_var", "bn.running_mean"}});
  h.push_back({"4 bytes after the last tensor",
               [](const fs::path& f, const std::vector<Blob>& b) {
                 auto [header, data] = layout(b);
                 data.resize(data.size() + 4);
                 write_raw(f, header, data);
               },
               {"4 bytes after the end of the last tensor"}});
  h.push_back({"a tensor listed twice",
               [](const fs::path& f, const std::vector<Blob>& b) {
                 auto [header, data] = layout(b);
                 header.pop_back();
                 write_raw(f, header + "," + entry(b[0], 0, b[0].bytes.size()) + "}", data);
               },
               {"\"stem.weight\" appears twice"}});
  h.push_back({"data_offsets twice in one tensor (Python's json keeps the last)",
               [](const fs::path& f, const std::vector<Blob>& b) {
                 auto [header, data] = layout(b);
                 const std::string first = "\"data_offsets\":[0,";
                 const auto at = header.find(first);
                 header.insert(at, "\"data_offsets\":[4,8],");
                 write_raw(f, header, data);
               },
               {"\"data_offsets\" appears twice"}});
  h.push_back({"a negative num_batches_tracked (read before any float is written)",
               [](const fs::path& f, std::vector<Blob> b) {
                 const std::int64_t minus = -1;
                 std::memcpy(find(b, "blocks.0.downsample.1.num_batches_tracked")->bytes.data(), &minus, 8);
                 auto [header, data] = layout(b);
                 write_raw(f, header, data);
               },
               {"blocks.0.downsample.1.num_batches_tracked", "negative"}});
  h.push_back({"a header that does not start with {",
               [](const fs::path& f, const std::vector<Blob>& b) {
                 auto [header, data] = layout(b);
                 header.insert(header.begin(), ' ');
                 write_raw(f, header, data);
               },
               {"does not start with '{'"}});
  return h;
}

TEST(safetensors, a_file_written_by_hand_as_the_writer_does_loads) {
  // The baseline of the hostile files below: the hand layout itself is valid.
  const fs::path file = temp_file(), raw = temp_file("_raw");
  State<Small> a, b;
  a.randomize(20);
  a.save(file, 3);
  auto [header, data] = layout(read_blobs(file));
  write_raw(raw, header, data);
  EXPECT_EQ(b.load(raw).value_or(0), 3u);
  EXPECT_TRUE(a.same_tensors(b));
}

TEST(safetensors, every_refused_file_leaves_parameters_buffers_and_step_bit_identical) {
  const fs::path file = temp_file(), bad = temp_file("_bad");
  State<Small> a;
  a.randomize(21);
  a.save(file, 9);
  const std::vector<Blob> blobs = read_blobs(file);
  for (const Hostile& h : hostile_files()) {
    SCOPED_TRACE(h.what);
    h.write(bad, blobs);
    FakeModel m;
    m.state.randomize(22);
    m.steps = 5;
    const FakeModel before = m;
    try {
      io::load_safetensors(m, bad);
      ADD_FAILURE() << "loaded without an error";
    } catch (const data_error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(bad.string()), std::string::npos) << what;
      for (const auto& part : h.message) EXPECT_NE(what.find(part), std::string::npos) << what;
    }
    ASSERT_EQ(m.state.params.size(), before.state.params.size());
    EXPECT_EQ(std::memcmp(m.state.params.data(), before.state.params.data(), m.state.params.size() * sizeof(float)), 0);
    EXPECT_EQ(std::memcmp(m.state.buffers.data(), before.state.buffers.data(), m.state.buffers.size() * sizeof(float)),
              0);
    EXPECT_EQ(m.steps, 5u);
  }
}

/// Files in `dir` whose name ends in ".tmp".
std::vector<std::string> temporaries(const fs::path& dir) {
  std::vector<std::string> found;
  for (const auto& f : fs::directory_iterator(dir))
    if (f.path().extension() == ".tmp") found.push_back(f.path().string());
  return found;
}

TEST(safetensors, a_write_that_fails_part_way_leaves_neither_the_file_nor_a_temporary_one) {
  // The file size capped at 1000 bytes (the file is about 4 KB): the write fails with EFBIG part-way. In a
  // child process, so that the cap stays there.
  const fs::path dir = temp_file("_full");
  fs::remove_all(dir);
  fs::create_directories(dir);
  EXPECT_EXIT(
      {
        std::signal(SIGXFSZ, SIG_IGN);  // a write past the cap then fails instead of killing the process
        rlimit limit{};
        limit.rlim_cur = limit.rlim_max = 1000;
        setrlimit(RLIMIT_FSIZE, &limit);
        State<Small> a;
        try {
          a.save(dir / "w.safetensors");
        } catch (const error& e) {
          const bool named = std::string(e.what()).find("w.safetensors.tmp failed") != std::string::npos;
          std::_Exit(named && fs::is_empty(dir) ? 0 : 2);
        }
        std::_Exit(3);
      },
      ::testing::ExitedWithCode(0), "");
  fs::remove_all(dir);
}

TEST(safetensors, saving_onto_a_directory_is_an_error_and_leaves_no_temporary_file) {
  const fs::path dir = temp_file("_dir");
  fs::remove_all(dir);
  fs::create_directories(dir / "inside");
  const fs::path parent = dir.parent_path();
  State<Small> a;
  try {
    a.save(dir);
    ADD_FAILURE() << "saved onto a directory";
  } catch (const error& e) {
    EXPECT_NE(std::string(e.what()).find(dir.string() + " is a directory"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(temporaries(parent).empty());
  EXPECT_TRUE(fs::is_directory(dir / "inside")) << "the directory is untouched";
  EXPECT_THROW(a.save(dir / "missing" / "w.safetensors"), error);
  EXPECT_TRUE(temporaries(dir).empty());
  fs::remove_all(dir);
}



TEST(safetensors, a_model_keeps_its_step_as_num_batches_tracked) {
  const fs::path file = temp_file();
  FakeModel a, b;
  a.state.randomize(9);
  a.steps = 12;
  io::save_safetensors(a, file);
  io::load_safetensors(b, file);
  EXPECT_EQ(b.steps, 12u);
  EXPECT_EQ(read_blobs(file).size(), state_dict_entries<Small>().size());
}

}  // namespace
