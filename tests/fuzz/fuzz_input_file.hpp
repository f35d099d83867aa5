// tests/fuzz/fuzz_input_file.hpp: the readers take paths, so each fuzz input is written to a file of its own.
#pragma once

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <string>
#include <system_error>

namespace sinew::fuzz {

/// Writes `data` to a file of this process (on /dev/shm when there is one: the fuzzer writes one per input)
/// and returns its path. `suffix` lets a reader that cares see the extension it expects.
inline std::filesystem::path input_file(const std::uint8_t* data, std::size_t size, const char* suffix = "") {
  static const std::filesystem::path dir = std::filesystem::is_directory("/dev/shm")
                                               ? std::filesystem::path("/dev/shm")
                                               : std::filesystem::temp_directory_path();
  const std::filesystem::path path = dir / ("sinew-fuzz-" + std::to_string(::getpid()) + suffix);
  // Removed when the process exits (libFuzzer ends a timed run with exit()), so no run leaves files behind.
  struct remove_at_exit {
    std::set<std::filesystem::path> paths;
    ~remove_at_exit() {
      std::error_code ignored;
      for (const auto& p : paths) std::filesystem::remove(p, ignored);
    }
  };
  static remove_at_exit written;
  written.paths.insert(path);
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) std::abort();
  if (size > 0 && std::fwrite(data, 1, size, f) != size) std::abort();
  std::fclose(f);
  return path;
}

}  // namespace sinew::fuzz
