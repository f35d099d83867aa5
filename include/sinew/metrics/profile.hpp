// sinew/metrics/profile.hpp: per-operator timing as a compile-time policy of the Model and the Trainer.
//
//   NoProfile          the default: every hook is an empty inline function, so a build without profiling
//                      contains no timer at all;
//   OperatorProfile    wall time and calls per node and direction (forward / backward), named after the
//                      layer and its fused activation ("conv2d+tanh"), aggregated by operator kind too,
//                      and written as JSON or CSV.
// Times are measured around each op's forward() and backward(); oneDNN runs synchronously on the CPU, so
// wall time is the operator's time.
#pragma once

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "sinew/core/error.hpp"
#include "sinew/metrics/json.hpp"
#include "sinew/metrics/timer.hpp"

namespace sinew::metrics {

enum class Direction { forward, backward };

/// Profiling off: nothing is measured, nothing is stored.
struct NoProfile {
  static constexpr bool kEnabled = false;
  void resize(std::vector<std::string>) {}
  void add(std::size_t, Direction, double) {}
};

/// Time per node and direction, summed over calls until reset().
class OperatorProfile {
 public:
  static constexpr bool kEnabled = true;

  struct Entry {
    std::string name;  ///< "conv2d+tanh", "avg_pool", ...
    double forward_seconds = 0, backward_seconds = 0;
    std::size_t forward_calls = 0, backward_calls = 0;
  };

  /// Called by the Model once with one name per node.
  void resize(std::vector<std::string> names) {
    entries_.clear();
    for (auto& n : names) entries_.push_back({std::move(n)});
  }
  void add(std::size_t node, Direction d, double seconds) {
    Entry& e = entries_[node];
    if (d == Direction::forward) {
      e.forward_seconds += seconds;
      ++e.forward_calls;
    } else {
      e.backward_seconds += seconds;
      ++e.backward_calls;
    }
  }
  void reset() {
    for (Entry& e : entries_) e.forward_seconds = e.backward_seconds = 0, e.forward_calls = e.backward_calls = 0;
  }

  const std::vector<Entry>& nodes() const noexcept { return entries_; }

  /// Seconds per operator kind and direction ("conv2d+tanh/forward"), summed over the nodes of that kind.
  std::map<std::string, double> by_kind() const {
    std::map<std::string, double> m;
    for (const Entry& e : entries_) {
      m[e.name + "/forward"] += e.forward_seconds;
      m[e.name + "/backward"] += e.backward_seconds;
    }
    return m;
  }

  /// One object per node, in execution order; seconds are per call.
  Json to_json() const {
    auto a = Json::make_array();
    for (std::size_t i = 0; i < entries_.size(); ++i) {
      const Entry& e = entries_[i];
      auto j = Json::make_object();
      j.set("node", i);
      j.set("operator", e.name);
      j.set("forward_seconds_per_call", e.forward_calls ? e.forward_seconds / double(e.forward_calls) : 0.0);
      j.set("backward_seconds_per_call", e.backward_calls ? e.backward_seconds / double(e.backward_calls) : 0.0);
      j.set("forward_calls", e.forward_calls);
      j.set("backward_calls", e.backward_calls);
      a.push_back(std::move(j));
    }
    return a;
  }

  /// node,operator,direction,seconds_per_call,calls
  void write_csv(const std::string& path) const {
    std::ofstream f(path);
    if (!f) throw error("profile: cannot open " + path + " for writing");
    f << "node,operator,direction,seconds_per_call,calls\n";
    for (std::size_t i = 0; i < entries_.size(); ++i) {
      const Entry& e = entries_[i];
      f << i << ',' << e.name << ",forward," << (e.forward_calls ? e.forward_seconds / double(e.forward_calls) : 0)
        << ',' << e.forward_calls << '\n';
      f << i << ',' << e.name << ",backward,"
        << (e.backward_calls ? e.backward_seconds / double(e.backward_calls) : 0) << ',' << e.backward_calls << '\n';
    }
  }

 private:
  std::vector<Entry> entries_;
};

}  // namespace sinew::metrics
