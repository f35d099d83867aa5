// sinew/data/detail/read_file.hpp: bounded reads of data files that may be gzip-compressed.
//
// A reader never holds more than the file's format allows: an IDX header says how many bytes follow, so
// exactly that many are read (and one more, to tell that the file has too many); a CIFAR file has no header,
// so it is refused beyond a fixed bound. A gzip file is inflated as it is read, never whole up front, and
// a header that promises more than its compressed size can hold (deflate inflates at most 1032:1) is
// refused before anything is allocated. Devices, pipes and sockets are refused before reading (/dev/zero
// never ends), and an allocation that fails is a data_error naming the file, not a bare std::bad_alloc.
#pragma once

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <memory>
#include <new>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "sinew/core/error.hpp"

namespace sinew::data::detail {

/// The name messages give a file once it is open: its last component, as in
/// "cifar: data_batch_3.bin is 30729999 bytes"; the full path is shown only when the file cannot be found.
inline std::string file_name(const std::filesystem::path& path) { return path.filename().string(); }

/// Deflate's largest ratio of inflated to compressed bytes (zlib's technical details: 1032:1).
inline constexpr std::uint64_t kMaxInflateRatio = 1032;

/// The bytes of a data file in order, inflated if it is gzip (told by its 1f 8b magic bytes, not by the
/// extension; concatenated gzip members are one stream, as gunzip reads them). Nothing after the last member
/// may follow: trailing bytes are an error, as is a stream that stops mid-way.
class file_source {
 public:
  /// `area` ("idx", "cifar") starts every message.
  file_source(const std::filesystem::path& path, std::string_view area)
      : where_(std::string(area) + ": " + file_name(path)) {
    const std::string prefix = std::string(area) + ": ";
    std::error_code ec;
    const auto status = std::filesystem::status(path, ec);
    if (!std::filesystem::exists(status))
      throw data_error(prefix + path.string() + ": no such file (check the path, or download the data set there)");
    if (std::filesystem::is_directory(status))
      throw data_error(prefix + path.string() + " is a directory, expected a data file");
    if (!std::filesystem::is_regular_file(status))
      throw data_error(prefix + path.string() + " is not a regular file (a device, pipe or socket; it may never " +
                       "end): copy the data into a file and pass that");
    disk_size_ = std::filesystem::file_size(path, ec);
    if (ec) throw data_error(prefix + path.string() + ": cannot read its size (" + ec.message() + ")");
    errno = 0;
    file_.reset(std::fopen(path.string().c_str(), "rb"));
    if (file_ == nullptr)
      throw data_error(prefix + path.string() + ": cannot open (" +
                       (errno != 0 ? std::generic_category().message(errno) : std::string("unknown error")) + ")");
    fill();
    compressed_ = in_end_ >= 2 && in_[0] == 0x1f && in_[1] == 0x8b;
    if (compressed_) {
      if (inflateInit2(&z_, 16 + MAX_WBITS) != Z_OK) throw data_error(where_ + ": cannot start zlib (out of memory)");
      z_open_ = true;
    }
  }
  file_source(const file_source&) = delete;
  file_source& operator=(const file_source&) = delete;
  ~file_source() {
    if (z_open_) inflateEnd(&z_);
  }

  bool compressed() const noexcept { return compressed_; }
  /// The size of the file on disk.
  std::uint64_t disk_size() const noexcept { return disk_size_; }
  /// The most bytes the file can hold once inflated: its size if plain, 1032 times it if gzip.
  std::uint64_t max_content_size() const noexcept {
    if (!compressed_) return disk_size_;
    return disk_size_ > std::numeric_limits<std::uint64_t>::max() / kMaxInflateRatio
               ? std::numeric_limits<std::uint64_t>::max()
               : disk_size_ * kMaxInflateRatio;
  }
  /// "idx: train-images-idx3-ubyte.gz": how messages name the file.
  const std::string& where() const noexcept { return where_; }
  /// Bytes of content read so far.
  std::uint64_t consumed() const noexcept { return consumed_; }

  /// Reads up to `n` bytes into `dst`; fewer only at the end of the content.
  std::size_t read(std::uint8_t* dst, std::size_t n) {
    std::size_t got = 0;
    while (got < n && !done_) got += compressed_ ? inflate_some(dst + got, n - got) : copy_some(dst + got, n - got);
    consumed_ += got;
    return got;
  }

  /// Whether the content has ended (reads at most one byte further, which is then lost).
  bool at_end() {
    std::uint8_t byte = 0;
    return read(&byte, 1) == 0;
  }

 private:
  static constexpr std::size_t kChunk = 1u << 16;

  /// Refills the input buffer from the file; false at the end of the file.
  bool fill() {
    in_pos_ = 0;
    in_end_ = std::fread(in_.data(), 1, in_.size(), file_.get());
    if (in_end_ == 0 && std::ferror(file_.get())) throw data_error(where_ + ": reading failed (" + io_error() + ")");
    return in_end_ > 0;
  }
  std::string io_error() const { return errno != 0 ? std::generic_category().message(errno) : "I/O error"; }

  std::size_t copy_some(std::uint8_t* dst, std::size_t n) {
    if (in_pos_ == in_end_ && !fill()) {
      done_ = true;
      return 0;
    }
    const std::size_t take = std::min(n, in_end_ - in_pos_);
    std::copy_n(in_.data() + in_pos_, take, dst);
    in_pos_ += take;
    return take;
  }

  std::size_t inflate_some(std::uint8_t* dst, std::size_t n) {
    if (in_pos_ == in_end_ && !fill()) {
      if (member_ended_) {
        done_ = true;
        return 0;
      }
      throw data_error(where_ + ": gzip stream ends early after " + std::to_string(consumed_) +
                       " bytes (truncated download?)");
    }
    if (member_ended_) {  // another member, or bytes that do not belong to the file
      if (in_[in_pos_] != 0x1f || (in_pos_ + 1 < in_end_ && in_[in_pos_ + 1] != 0x8b))
        throw data_error(where_ + ": bytes after the end of the gzip stream (at byte " +
                         std::to_string(garbage_offset()) +
                         " of the file) are not gzip data (a damaged file, or something appended to it?)");
      if (inflateReset(&z_) != Z_OK) throw data_error(where_ + ": corrupt gzip data (re-download the file)");
      member_ended_ = false;
    }
    z_.next_in = in_.data() + in_pos_;
    z_.avail_in = static_cast<uInt>(in_end_ - in_pos_);
    z_.next_out = dst;
    z_.avail_out = static_cast<uInt>(std::min<std::size_t>(n, std::numeric_limits<uInt>::max()));
    const int rc = inflate(&z_, Z_NO_FLUSH);
    const std::size_t produced = static_cast<std::size_t>(z_.next_out - dst);
    in_pos_ = static_cast<std::size_t>(z_.next_in - in_.data());
    if (rc == Z_STREAM_END) {
      member_ended_ = true;
    } else if (rc == Z_MEM_ERROR) {
      throw data_error(where_ + ": out of memory while inflating");
    } else if (rc != Z_OK && rc != Z_BUF_ERROR) {
      throw data_error(where_ + ": corrupt gzip data (" + std::string(z_.msg ? z_.msg : "zlib error " +
                                                                                          std::to_string(rc)) +
                       "; re-download the file)");
    }
    return produced;
  }
  /// Where in the file the next byte not yet handed to zlib lies.
  std::uint64_t garbage_offset() const {
    const long at = std::ftell(file_.get());
    return at < 0 ? 0 : std::uint64_t(at) - (in_end_ - in_pos_);
  }

  std::string where_;
  struct closer {
    void operator()(std::FILE* f) const noexcept { std::fclose(f); }
  };
  std::unique_ptr<std::FILE, closer> file_;  // closed also when the constructor throws after opening
  std::uint64_t disk_size_ = 0, consumed_ = 0;
  std::vector<std::uint8_t> in_ = std::vector<std::uint8_t>(kChunk);
  std::size_t in_pos_ = 0, in_end_ = 0;
  bool compressed_ = false, z_open_ = false, member_ended_ = false, done_ = false;
  z_stream z_{};
};

/// `count` bytes of storage for the file that `source` reads, or a data_error naming it.
inline void reserve_for(std::vector<std::uint8_t>& bytes, std::size_t count, const file_source& source) {
  try {
    bytes.reserve(count);
  } catch (const std::bad_alloc&) {
    throw data_error(source.where() + ": cannot allocate " + std::to_string(count) +
                     " bytes to hold it (not enough memory; use a smaller split, or a machine with more)");
  } catch (const std::length_error&) {
    throw data_error(source.where() + ": cannot allocate " + std::to_string(count) + " bytes to hold it");
  }
}

/// Appends up to `count` bytes of `source` to `bytes` (fewer only at the end), growing the vector as they
/// arrive: its capacity, reserved by the caller, is only touched where data lands.
inline void append_from(file_source& source, std::vector<std::uint8_t>& bytes, std::size_t count) {
  constexpr std::size_t kStep = 1u << 20;
  while (count > 0) {
    const std::size_t old = bytes.size(), want = std::min(count, kStep);
    try {
      bytes.resize(old + want);
    } catch (const std::bad_alloc&) {
      throw data_error(source.where() + ": cannot allocate " + std::to_string(old + want) +
                       " bytes to hold it (not enough memory)");
    }
    const std::size_t got = source.read(bytes.data() + old, want);
    bytes.resize(old + got);
    if (got < want) return;
    count -= want;
  }
}

}  // namespace sinew::data::detail
