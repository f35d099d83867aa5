// examples/support/cli.hpp: the command-line options shared by sinew's examples and bench programs
// (--json FILE, --threads N, ...). Small on purpose: copy an example and change what you need.
#pragma once

#include <cstdlib>
#include <iostream>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace sinew::cli {

class Args {
 public:
  /// `usage` is printed for --help and for an unknown option; `positional` names the positional arguments.
  Args(int argc, char** argv, std::string usage) : usage_(std::move(usage)) {
    for (int i = 1; i < argc; ++i) {
      std::string a = argv[i];
      if (a == "--help" || a == "-h") {
        std::cout << usage_ << '\n';
        std::exit(0);
      }
      if (a.rfind("--", 0) == 0) {
        const auto eq = a.find('=');
        if (eq != std::string::npos) {
          values_[a.substr(2, eq - 2)] = a.substr(eq + 1);
        } else if (i + 1 < argc && std::string(argv[i + 1]).rfind("--", 0) != 0) {
          values_[a.substr(2)] = argv[++i];
        } else {
          values_[a.substr(2)] = "true";
        }
      } else {
        positional_.push_back(a);
      }
    }
  }

  std::string get(const std::string& name, const std::string& fallback) {
    used_.insert({name, true});
    const auto it = values_.find(name);
    return it == values_.end() ? fallback : it->second;
  }
  double number(const std::string& name, double fallback) {
    const std::string v = get(name, "");
    if (v.empty()) return fallback;
    try {
      std::size_t end = 0;
      const double x = std::stod(v, &end);
      if (end == v.size()) return x;
    } catch (const std::exception&) {
    }
    fail("--" + name + " expects a number, got '" + v + "'");
  }
  int integer(const std::string& name, int fallback) { return int(number(name, fallback)); }
  bool flag(const std::string& name) { return get(name, "false") == "true"; }
  const std::vector<std::string>& positional() const { return positional_; }

  /// Call after reading every option: an option nobody read is a typo.
  void check_unused() {
    for (const auto& [k, v] : values_)
      if (!used_.count(k)) fail("unknown option --" + k);
  }

  [[noreturn]] void fail(const std::string& message) {
    std::cerr << "error: " << message << "\n\n" << usage_ << '\n';
    std::exit(2);
  }

 private:
  std::string usage_;
  std::map<std::string, std::string> values_;
  std::map<std::string, bool> used_;
  std::vector<std::string> positional_;
};

}  // namespace sinew::cli
