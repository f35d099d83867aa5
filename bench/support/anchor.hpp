// bench/support/anchor.hpp: runs a PyTorch anchor script (bench/pytorch/*.py) with Debian's /usr/bin/python3
// in the same run as the sinew measurement, and reads images/s per batch size from the JSON lines it prints.
#pragma once

#include <cstdio>
#include <map>
#include <regex>
#include <string>

namespace sinew::bench {

/// Anchor results keyed by batch size; empty when torch cannot be imported (the script exits with 3).
struct Anchor {
  std::map<int, double> images_per_second;
  std::map<int, double> peak_rss_bytes;
  std::string torch_version, blas, note;
};

inline Anchor run_pytorch_anchor(const std::string& script, const std::string& arguments) {
  Anchor a;
  const std::string command = "/usr/bin/python3 " + script + " " + arguments + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) {
    a.note = "could not start /usr/bin/python3";
    return a;
  }
  std::string out;
  char buf[4096];
  while (std::fgets(buf, sizeof buf, pipe)) out += buf;
  const int status = pclose(pipe);
  if (status != 0) {
    a.note = "PyTorch anchor unavailable (" + script + " exited with " + std::to_string(status >> 8) + "): " + out;
    return a;
  }
  const std::regex line_re(R"(\{[^\n]*"batch": (\d+)[^\n]*\})");
  const auto number = [](const std::string& line, const char* key) {
    std::smatch m;
    const std::regex re(std::string("\"") + key + R"re(": ([0-9.eE+-]+))re");
    return std::regex_search(line, m, re) ? std::stod(m[1]) : 0.0;
  };
  const auto text = [](const std::string& line, const char* key) {
    std::smatch m;
    const std::regex re(std::string("\"") + key + R"re(": "([^"]*)")re");
    return std::regex_search(line, m, re) ? std::string(m[1]) : std::string();
  };
  for (std::sregex_iterator it(out.begin(), out.end(), line_re), end; it != end; ++it) {
    const std::string line = (*it)[0];
    const int batch = std::stoi((*it)[1]);
    a.images_per_second[batch] = number(line, "images_per_second");
    a.peak_rss_bytes[batch] = number(line, "peak_rss_bytes");
    a.torch_version = text(line, "torch_version");
    a.blas = text(line, "blas");
  }
  return a;
}

}  // namespace sinew::bench
