// tests/support/data_files.hpp: for the tests of readers (tests/data): a scratch directory per test, file writers
// (plain, gzip, big-endian words as IDX headers hold them), and checks of the data_error a bad file gives.
#pragma once

#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "sinew/core/error.hpp"

namespace sinew::test {

/// A fresh directory under the system temp directory, removed with its contents when the test ends.
class TempDir {
 public:
  TempDir() {
    const auto* test = ::testing::UnitTest::GetInstance()->current_test_info();
    std::random_device entropy;
    path_ = std::filesystem::temp_directory_path() /
            ("sinew-data-" + std::string(test ? test->name() : "test") + "-" + std::to_string(entropy()) +
             std::to_string(entropy()));
    std::filesystem::create_directories(path_);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }

  std::filesystem::path operator/(std::string_view name) const { return path_ / name; }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

inline void write_plain(const std::filesystem::path& path, std::span<const std::uint8_t> bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(out.good()) << "cannot write " << path;
}

/// Writes `bytes` gzip-compressed, as the dataset downloads are.
inline void write_gzip(const std::filesystem::path& path, std::span<const std::uint8_t> bytes) {
  gzFile file = gzopen(path.string().c_str(), "wb");
  ASSERT_NE(file, nullptr) << "cannot write " << path;
  if (!bytes.empty()) {
    EXPECT_EQ(gzwrite(file, bytes.data(), static_cast<unsigned>(bytes.size())), static_cast<int>(bytes.size()));
  }
  ASSERT_EQ(gzclose(file), Z_OK);
}

/// Appends `value` most significant byte first, as IDX files store their magic number and sizes.
inline void append_big_endian(std::vector<std::uint8_t>& out, std::uint32_t value) {
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<std::uint8_t>(value >> shift));
}

inline std::vector<std::uint8_t> read_plain(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

/// The message of the sinew::data_error that `f` throws, or a test failure and "" if it throws none.
template <class F>
std::string data_error_message(F&& f) {
  try {
    f();
  } catch (const sinew::data_error& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected sinew::data_error, none was thrown";
  return "";
}

/// EXPECT_TRUE(contains(message, "wrong magic")) prints the whole message when the phrase is missing.
inline ::testing::AssertionResult contains(const std::string& message, std::string_view phrase) {
  if (message.find(phrase) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "\"" << message << "\" lacks \"" << phrase << "\"";
}

}  // namespace sinew::test
