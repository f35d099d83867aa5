// sinew/data/detail/tar_reader.hpp: one pass through a tar file, member by member, with large buffered reads.
//
// Reads what Python's tarfile (pax by default) and GNU tar write: POSIX ustar headers (name with prefix), pax
// extended headers ('x': path and size apply to the next member; 'g': global, read and left aside) and GNU
// long names ('L'); sizes in octal or GNU's base-256. Only regular files are returned; directories, links and
// the like are passed over. A header whose checksum does not match, or a member that runs past the end of the
// file, is a data_error naming the file and the member: a shard cut short by an interrupted copy says so.
#pragma once

#include <sys/stat.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "sinew/core/error.hpp"

namespace sinew::data::detail {

/// A regular file in a tar archive: its path in the archive, its size and where its data start in the file.
struct tar_member {
  std::string name;
  std::uint64_t size = 0;
  std::uint64_t offset = 0;
};

class tar_reader {
 public:
  static constexpr std::size_t kBlock = 512;

  /// Opens `path`; messages call it `shown` (the shard's file name). `buffer` bytes are read at a time.
  explicit tar_reader(const std::filesystem::path& path, std::string shown, std::size_t buffer = std::size_t{1} << 20)
      : shown_(std::move(shown)), buffer_(buffer) {
    file_.reset(std::fopen(path.c_str(), "rb"));
    if (!file_)
      throw data_error("tar shards: cannot open " + path.string() + " (missing, or no permission to read it)");
    std::setvbuf(file_.get(), buffer_.data(), _IOFBF, buffer_.size());
    struct stat st {};
    if (::fstat(fileno(file_.get()), &st) != 0) throw data_error("tar shards: cannot stat " + path.string());
    file_size_ = static_cast<std::uint64_t>(st.st_size);
  }

  /// Advances to the next regular file, passing over what is left of the current one; false at the archive's
  /// end (a zero block, or the end of the file at a header's place), and from then on.
  bool next(tar_member& member) {
    if (ended_) return false;
    skip(unread_ + padding(current_.size));
    unread_ = 0;
    std::string long_name, pax_path;
    std::uint64_t pax_size = 0;
    bool has_pax_size = false;
    for (;;) {
      unsigned char h[kBlock];
      const std::uint64_t at = position_;
      const std::size_t got = std::fread(h, 1, kBlock, file_.get());
      position_ += got;
      if (got == 0) return ended_ = true, false;  // no end-of-archive blocks: tolerated, as GNU tar does
      if (got < kBlock)
        throw data_error("tar shards: " + shown_ + " is truncated (it ends inside the header at byte " +
                         std::to_string(at) + "; copy or pack the shard again)");
      if (all_zero(h)) return ended_ = true, false;
      check_sum(h, at);
      const char type = static_cast<char>(h[156]);
      const std::uint64_t size = number(h + 124, 12, at);
      std::string name = field(h, 100);
      if (std::memcmp(h + 257, "ustar", 5) == 0 && h[345] != 0) name = field(h + 345, 155) + "/" + name;
      if (type == 'L' || type == 'x' || type == 'g') {  // their data describe the next member
        std::vector<std::uint8_t> data;
        read_exactly(data, size, name);
        skip(padding(size));
        if (type == 'L') {
          long_name.assign(data.begin(), data.end());
          long_name.resize(std::strlen(long_name.c_str()));
        } else if (type == 'x') {
          parse_pax(data, at, pax_path, pax_size, has_pax_size);
        }
        continue;
      }
      current_.name = !pax_path.empty() ? pax_path : !long_name.empty() ? long_name : name;
      current_.size = has_pax_size ? pax_size : size;
      current_.offset = position_;
      if (type != '0' && type != '\0' && type != '7') {  // not a regular file: passed over
        if (type == '1' || type == '2' || type == '3' || type == '4' || type == '5' || type == '6') current_.size = 0;
        skip(current_.size + padding(current_.size));
        current_.size = 0;
        pax_path.clear(), long_name.clear(), has_pax_size = false;
        continue;
      }
      // A member that runs past the end fails when its data are read or passed over, not here: the sample
      // before it is whole, and a reader that groups members by key can still hand it out.
      unread_ = current_.size;
      member = current_;
      return true;
    }
  }

  /// The current member's data (call at most once per member, after next()).
  void read(std::vector<std::uint8_t>& out) {
    read_exactly(out, unread_, current_.name);
    unread_ = 0;
  }

  const std::string& shown() const { return shown_; }

 private:
  struct closer {
    void operator()(std::FILE* f) const { std::fclose(f); }
  };

  static std::uint64_t padding(std::uint64_t size) { return (kBlock - size % kBlock) % kBlock; }

  static bool all_zero(const unsigned char* h) {
    for (std::size_t i = 0; i < kBlock; ++i)
      if (h[i] != 0) return false;
    return true;
  }

  static std::string field(const unsigned char* p, std::size_t width) {
    std::size_t n = 0;
    while (n < width && p[n] != 0) ++n;
    return std::string(reinterpret_cast<const char*>(p), n);
  }

  std::string at_byte(std::uint64_t at) const { return shown_ + ": the header at byte " + std::to_string(at); }

  // The checksum: the header's bytes summed with its own field read as spaces (unsigned, or signed as some old
  // tars wrote it).
  void check_sum(const unsigned char* h, std::uint64_t at) const {
    std::uint64_t unsigned_sum = 0;
    std::int64_t signed_sum = 0;
    for (std::size_t i = 0; i < kBlock; ++i) {
      const unsigned char c = (i >= 148 && i < 156) ? ' ' : h[i];
      unsigned_sum += c;
      signed_sum += static_cast<signed char>(c);
    }
    const std::uint64_t stored = number(h + 148, 8, at);
    if (stored != unsigned_sum && static_cast<std::int64_t>(stored) != signed_sum)
      throw data_error("tar shards: " + at_byte(at) + " is corrupt (its checksum does not match: not a tar file, " +
                       "or damaged; copy or pack the shard again)");
  }

  // An octal field (spaces or NULs around it), or GNU's base-256 when its first byte has the high bit set.
  std::uint64_t number(const unsigned char* p, std::size_t width, std::uint64_t at) const {
    std::uint64_t value = 0;
    if (p[0] & 0x80) {
      for (std::size_t i = 1; i < width; ++i) value = (value << 8) | p[i];
      return value;
    }
    std::size_t i = 0;
    while (i < width && (p[i] == ' ' || p[i] == 0)) ++i;
    for (; i < width && p[i] >= '0' && p[i] <= '7'; ++i) value = value * 8 + static_cast<std::uint64_t>(p[i] - '0');
    if (i < width && p[i] != ' ' && p[i] != 0)
      throw data_error("tar shards: " + at_byte(at) + " is corrupt (a number field holds '" +
                       std::string(1, static_cast<char>(p[i])) + "'; copy or pack the shard again)");
    return value;
  }

  // pax records: "LEN key=value\n" each; path and size are the ones sinew needs.
  void parse_pax(const std::vector<std::uint8_t>& data, std::uint64_t at, std::string& path, std::uint64_t& size,
                 bool& has_size) const {
    const std::string_view all(reinterpret_cast<const char*>(data.data()), data.size());
    std::size_t pos = 0;
    while (pos < all.size() && all[pos] != 0) {
      std::size_t length = 0, digits = pos;
      while (digits < all.size() && all[digits] >= '0' && all[digits] <= '9')
        length = length * 10 + static_cast<std::size_t>(all[digits++] - '0');
      if (digits == pos || digits >= all.size() || all[digits] != ' ' || length <= digits - pos + 1 ||
          pos + length > all.size() || all[pos + length - 1] != '\n')
        throw data_error("tar shards: " + at_byte(at) + " holds a malformed pax record (copy or pack the shard again)");
      const std::string_view record = all.substr(digits + 1, pos + length - 1 - (digits + 1));
      const std::size_t eq = record.find('=');
      if (eq != std::string_view::npos) {
        const std::string_view key = record.substr(0, eq), value = record.substr(eq + 1);
        if (key == "path") path = std::string(value);
        if (key == "size") {
          size = 0;
          for (char c : value) size = size * 10 + static_cast<std::uint64_t>(c - '0');
          has_size = true;
        }
      }
      pos += length;
    }
  }

  void read_exactly(std::vector<std::uint8_t>& out, std::uint64_t size, const std::string& member) {
    out.resize(static_cast<std::size_t>(size));
    const std::size_t got = size == 0 ? 0 : std::fread(out.data(), 1, out.size(), file_.get());
    position_ += got;
    if (got != size)
      throw data_error("tar shards: " + shown_ + " is truncated (it ends inside member " + member + ", at byte " +
                       std::to_string(position_) + "; copy or pack the shard again)");
  }

  void skip(std::uint64_t bytes) {
    if (bytes == 0) return;
    if (position_ + bytes > file_size_)
      throw data_error("tar shards: " + shown_ + " is truncated (it ends inside member " + current_.name +
                       ", at byte " + std::to_string(file_size_) + "; copy or pack the shard again)");
    if (std::fseek(file_.get(), static_cast<long>(bytes), SEEK_CUR) != 0)
      throw data_error("tar shards: " + shown_ + ": cannot seek past byte " + std::to_string(position_));
    position_ += bytes;
  }

  std::string shown_;
  std::vector<char> buffer_;  // stdio's buffer: declared before file_, so it outlives the FILE that uses it
  std::unique_ptr<std::FILE, closer> file_;
  std::uint64_t file_size_ = 0, position_ = 0;
  tar_member current_;
  std::uint64_t unread_ = 0;  // bytes of current_'s data not yet read
  bool ended_ = false;
};

}  // namespace sinew::data::detail
