// sinew/data/detail/read_file.hpp: whole-file reads of data files that may be gzip-compressed.
#pragma once

#include <zlib.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "sinew/core/error.hpp"

namespace sinew::data::detail {

/// The name messages give a file once it is open: its last component, as in
/// "cifar: data_batch_3.bin is 30729999 bytes"; the full path is shown only when the file cannot be found.
inline std::string file_name(const std::filesystem::path& path) { return path.filename().string(); }

/// Every byte of `path`, decompressed if it is gzip. zlib tells gzip by its 1f 8b magic bytes, not by the
/// extension, and passes any other file through unchanged. `area` ("idx", "cifar") starts every message.
inline std::vector<std::uint8_t> read_file(const std::filesystem::path& path, std::string_view area) {
  const std::string where = std::string(area) + ": ";
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (!std::filesystem::exists(status))
    throw data_error(where + path.string() + ": no such file (check the path, or download the data set there)");
  if (std::filesystem::is_directory(status))
    throw data_error(where + path.string() + " is a directory, expected a data file");

  errno = 0;
  gzFile file = gzopen(path.string().c_str(), "rb");
  if (file == nullptr)
    throw data_error(where + path.string() + ": cannot open (" +
                     (errno != 0 ? std::generic_category().message(errno) : std::string("out of memory")) + ")");
  struct closer {
    gzFile file;
    ~closer() { gzclose(file); }
  } close_at_exit{file};
  constexpr unsigned kChunk = 1u << 22;
  gzbuffer(file, 1u << 20);

  std::vector<std::uint8_t> bytes;
  // Exact for a plain file, so it never reallocates; a gzip file grows geometrically past it.
  if (const auto on_disk = std::filesystem::file_size(path, ec); !ec) bytes.reserve(on_disk + kChunk);
  for (;;) {
    const std::size_t old_size = bytes.size();
    bytes.resize(old_size + kChunk);
    const int got = gzread(file, bytes.data() + old_size, kChunk);
    if (got < 0) {
      int code = Z_OK;
      const char* what = gzerror(file, &code);
      throw data_error(where + file_name(path) + ": corrupt gzip data (" + what + "; re-download the file)");
    }
    bytes.resize(old_size + static_cast<std::size_t>(got));
    if (static_cast<unsigned>(got) < kChunk) break;  // gzread returns less than asked only at the end
  }
  int code = Z_OK;
  gzerror(file, &code);
  if (code == Z_BUF_ERROR)  // zlib's "unexpected end of file": the compressed stream stops mid-way
    throw data_error(where + file_name(path) + ": gzip stream ends early after " + std::to_string(bytes.size()) +
                     " bytes (truncated download?)");
  return bytes;
}

}  // namespace sinew::data::detail
