// Tar shards for the tests of data/tar_shards.hpp and of training on them: a small tar writer (ustar headers, GNU
// long names and pax path records on request) and WebDataset-layout shards of small PNGs.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "data_files.hpp"
#include "image_files.hpp"

namespace sinew::test {

// A tar written member by member: ustar headers, and a GNU 'L' or pax 'x' header for a name when asked.
class TarWriter {
 public:
  enum class long_name { none, gnu, pax };

  void add(const std::string& name, const Bytes& data, long_name how = long_name::none, char type = '0') {
    if (how == long_name::gnu) {
      Bytes text(name.begin(), name.end());
      text.push_back(0);
      header("././@LongLink", text.size(), 'L');
      body(text);
    } else if (how == long_name::pax) {
      std::string record = " path=" + name + "\n";
      std::size_t length = record.size() + 2;
      if (std::to_string(length).size() != 2) length = record.size() + std::to_string(record.size() + 3).size();
      record = std::to_string(length) + record;
      header("PaxHeaders/x", record.size(), 'x');
      body(Bytes(record.begin(), record.end()));
    }
    header(how == long_name::none ? name : name.substr(0, 99), data.size(), type);
    body(data);
  }
  Bytes finish() {
    bytes_.resize(bytes_.size() + 1024, 0);
    return bytes_;
  }
  Bytes& bytes() { return bytes_; }

 private:
  void header(const std::string& name, std::size_t size, char type) {
    unsigned char h[512] = {};
    std::memcpy(h, name.data(), std::min<std::size_t>(name.size(), 100));
    std::snprintf(reinterpret_cast<char*>(h + 100), 8, "%07o", 0644);
    std::snprintf(reinterpret_cast<char*>(h + 108), 8, "%07o", 0);
    std::snprintf(reinterpret_cast<char*>(h + 116), 8, "%07o", 0);
    std::snprintf(reinterpret_cast<char*>(h + 124), 12, "%011zo", size);
    std::snprintf(reinterpret_cast<char*>(h + 136), 12, "%011o", 0);
    h[156] = static_cast<unsigned char>(type);
    std::memcpy(h + 257, "ustar\0" "00", 8);
    std::memset(h + 148, ' ', 8);
    unsigned sum = 0;
    for (unsigned char c : h) sum += c;
    std::snprintf(reinterpret_cast<char*>(h + 148), 8, "%06o", sum);
    bytes_.insert(bytes_.end(), h, h + 512);
  }
  void body(const Bytes& data) {
    bytes_.insert(bytes_.end(), data.begin(), data.end());
    bytes_.resize((bytes_.size() + 511) / 512 * 512, 0);
  }
  Bytes bytes_;
};

inline Bytes text(const std::string& s) { return Bytes(s.begin(), s.end()); }

// Sample k's size x size PNG: its pixels depend on k.
inline Bytes sample_png(int k, int size = 4) { return png_bytes(rgb_image(size, size, k), size, size); }

// `shards` shards of `per_shard` samples of size x size each, keys "s<shard>/<k>", class k % classes.
inline void write_png_shards(const std::filesystem::path& dir, int size, int shards, int per_shard, int classes = 3) {
  for (int s = 0; s < shards; ++s) {
    TarWriter tar;
    for (int i = 0; i < per_shard; ++i) {
      const int k = s * per_shard + i;
      char key[32];
      std::snprintf(key, sizeof key, "s%d/%d", s, k);
      tar.add(std::string(key) + ".png", sample_png(k, size));
      tar.add(std::string(key) + ".cls", text(std::to_string(k % classes)));
    }
    char name[32];
    std::snprintf(name, sizeof name, "shard-%06d.tar", s);
    write_plain(dir / name, tar.finish());
  }
}

}  // namespace sinew::test
