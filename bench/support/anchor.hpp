// bench/support/anchor.hpp: runs a PyTorch anchor script (bench/pytorch/*.py) with Debian's /usr/bin/python3
// in the same run as the sinew measurement, and reads images/s per batch size from the JSON lines it prints.
#pragma once

#include <cstdio>
#include <map>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

namespace sinew::bench {

/// Anchor results keyed by batch size; empty when torch cannot be imported (the script exits with 3).
/// images_per_second is the best candidate's: eager NCHW, channels_last or (PyTorch 2.x) torch.compile, named in
/// best; compile_seconds (the compiled model's first step) is there only where torch.compile ran.
struct Anchor {
  std::map<int, double> images_per_second;
  std::map<int, double> peak_rss_bytes;
  std::map<int, double> images_per_second_compile, compile_seconds;
  std::map<int, std::string> best;
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
  // One JSON object per result line (bench/pytorch/common.py's print_result); other lines are PyTorch's own.
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line.front() != '{') continue;
    const auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.contains("batch") || !j["batch"].is_number_integer()) continue;
    const auto number = [&](const char* key) {
      return j.contains(key) && j[key].is_number() ? j[key].get<double>() : 0.0;
    };
    const auto text = [&](const char* key) {
      return j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : std::string();
    };
    const int batch = j["batch"].get<int>();
    a.images_per_second[batch] = number("images_per_second");
    a.peak_rss_bytes[batch] = number("peak_rss_bytes");
    if (number("compile_seconds") > 0) {
      a.images_per_second_compile[batch] = number("images_per_second_compile");
      a.compile_seconds[batch] = number("compile_seconds");
    }
    a.best[batch] = text("best");
    a.torch_version = text("torch_version");
    a.blas = text("blas");
  }
  return a;
}

}  // namespace sinew::bench
