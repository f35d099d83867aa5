// sinew/data/detail/record_file.hpp: a data file read by offset, from any thread, without holding it.
//
// StreamingLoader's sources read each record where it lies (pread, so threads share one descriptor).
// A gzip file cannot be read by offset, so it is inflated once, chunk by chunk, into an anonymous temporary
// file (created in std::filesystem::temp_directory_path(), which honours TMPDIR, and unlinked at once, so it
// is gone when closed, even after a crash) and read from there: memory stays bounded, and the cost is one
// decompression and the inflated size on the temporary directory's disk.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "sinew/core/error.hpp"
#include "sinew/data/detail/read_file.hpp"

namespace sinew::data::detail {

class record_file {
 public:
  /// Opens `path`; `area` ("cifar", "idx") starts every message.
  record_file(const std::filesystem::path& path, std::string_view area)
      : area_(area), name_(file_name(path)) {
    std::error_code ec;
    const auto status = std::filesystem::status(path, ec);
    if (!std::filesystem::exists(status))
      throw data_error(area_ + ": " + path.string() + ": no such file (check the path, or download the data set there)");
    if (std::filesystem::is_directory(status))
      throw data_error(area_ + ": " + path.string() + " is a directory, expected a data file");
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) throw data_error(area_ + ": " + path.string() + ": cannot open (" + errno_text() + ")");
    std::uint8_t magic[2] = {0, 0};
    if (::pread(fd_, magic, 2, 0) == 2 && magic[0] == 0x1f && magic[1] == 0x8b) inflate_to_temporary(path);
    struct stat st {};
    if (::fstat(fd_, &st) != 0) throw data_error(where() + "cannot stat (" + errno_text() + ")");
    size_ = static_cast<std::uint64_t>(st.st_size);
  }

  record_file(record_file&& other) noexcept
      : area_(std::move(other.area_)), name_(std::move(other.name_)), fd_(std::exchange(other.fd_, -1)),
        inflated_(other.inflated_), size_(other.size_) {}
  record_file(const record_file&) = delete;
  record_file& operator=(const record_file&) = delete;
  record_file& operator=(record_file&&) = delete;

  ~record_file() {
    if (fd_ >= 0) ::close(fd_);
  }

  /// Bytes in the file (after inflating, for gzip).
  std::uint64_t size() const { return size_; }
  /// The file's last path component, as messages name it.
  const std::string& name() const { return name_; }
  /// Whether it was gzip and is read from an inflated temporary copy.
  bool inflated() const { return inflated_; }

  /// Reads out.size() bytes at `offset`. Safe from several threads at once.
  void read(std::uint64_t offset, std::span<std::uint8_t> out) const {
    std::size_t done = 0;
    while (done < out.size()) {
      const ssize_t got =
          ::pread(fd_, out.data() + done, out.size() - done, static_cast<off_t>(offset + done));
      if (got < 0 && errno == EINTR) continue;
      if (got < 0) throw data_error(where() + "read failed at byte " + std::to_string(offset + done) + " (" +
                                    errno_text() + ")");
      if (got == 0)
        throw data_error(where() + "ends at byte " + std::to_string(offset + done) + ", expected " +
                         std::to_string(offset + out.size()) + " (the file shrank while it was read?)");
      done += static_cast<std::size_t>(got);
    }
  }

 private:
  std::string where() const { return area_ + ": " + name_ + ": "; }
  static std::string errno_text() { return std::generic_category().message(errno); }

  void inflate_to_temporary(const std::filesystem::path& path) {
    ::close(std::exchange(fd_, -1));
    gzFile in = gzopen(path.c_str(), "rb");
    if (in == nullptr) throw data_error(where() + "cannot open (" + errno_text() + ")");
    struct closer {
      gzFile file;
      ~closer() { gzclose(file); }
    } close_at_exit{in};
    std::error_code ec;
    std::string name = (std::filesystem::temp_directory_path(ec) / "sinew-inflated-XXXXXX").string();
    fd_ = ec ? -1 : ::mkostemp(name.data(), O_CLOEXEC);
    if (fd_ < 0)
      throw data_error(where() + "cannot create a temporary file to inflate it into (" +
                       (ec ? ec.message() : errno_text()) + "; set TMPDIR to a writable directory, or gunzip the file)");
    ::unlink(name.c_str());  // anonymous from here on: the descriptor keeps it until closed
    inflated_ = true;
    std::vector<std::uint8_t> chunk(1u << 20);
    for (;;) {
      const int got = gzread(in, chunk.data(), static_cast<unsigned>(chunk.size()));
      if (got < 0) {
        int code = Z_OK;
        throw data_error(where() + "corrupt gzip data (" + gzerror(in, &code) + "; re-download the file)");
      }
      if (got == 0) break;
      std::size_t written = 0;
      while (written < static_cast<std::size_t>(got)) {
        const ssize_t n = ::write(fd_, chunk.data() + written, static_cast<std::size_t>(got) - written);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0)
          throw data_error(where() + "cannot write its inflated copy to the temporary directory (" + errno_text() +
                           "; free space there, set TMPDIR, or gunzip the file)");
        written += static_cast<std::size_t>(n);
      }
    }
    int code = Z_OK;
    gzerror(in, &code);
    if (code == Z_BUF_ERROR)
      throw data_error(where() + "gzip stream ends early (truncated download?)");
  }

  std::string area_, name_;
  int fd_ = -1;
  bool inflated_ = false;  // fd_ is the unlinked, inflated copy of a gzip file
  std::uint64_t size_ = 0;
};

}  // namespace sinew::data::detail
