// bench/support/child.hpp: runs one measurement in a process of its own (a bench program started again, mpirun,
// or a PyTorch script) and reads back the "result KEY VALUE" lines it prints, so that peak memory and process
// state belong to that measurement alone.
#pragma once

#include <cstdio>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace sinew::bench {

struct ChildOutput {
  std::map<std::string, double> results;                  ///< "result KEY VALUE"
  std::map<std::string, std::vector<std::string>> lines;  ///< any other "TAG text" line: text, by tag
  std::string failure;                                    ///< empty when the command exited with 0
};

inline ChildOutput run_child(const std::string& command) {
  ChildOutput out;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (!pipe) return out.failure = "could not start " + command, out;
  std::string all;
  char buf[4096];
  while (std::fgets(buf, sizeof buf, pipe)) {
    std::string line(buf);
    all += line;
    if (!line.empty() && line.back() == '\n') line.pop_back();
    std::istringstream in(line);
    std::string tag, key;
    double v = 0;
    in >> tag;
    if (tag == "result" && in >> key >> v)
      out.results[key] = v;
    else if (!tag.empty() && line.size() > tag.size())
      out.lines[tag].push_back(line.substr(tag.size() + 1));
  }
  const int status = pclose(pipe);
  if (status != 0) out.failure = command + " exited with status " + std::to_string(status >> 8) + ":\n" + all;
  return out;
}

}  // namespace sinew::bench
