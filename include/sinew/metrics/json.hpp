// sinew/metrics/json.hpp: JSON reports (--json FILE) on nlohmann-json (Debian's nlohmann-json3-dev).
// Json keeps its objects' keys in insertion order, so a report reads in the order it was written:
//
//   auto j = sinew::metrics::Json::object();
//   j["images_per_second"] = 1234.5;
//   sinew::metrics::save_json(j, "out.json");
//
// A NaN or infinite number is written as null (JSON has neither); bytes that are not UTF-8 in a string (a file
// name, say) are written as U+FFFD rather than failing the report.
#pragma once

#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "sinew/core/error.hpp"

namespace sinew::metrics {

using Json = nlohmann::ordered_json;

/// Writes `j` (indented by 2) to `path`, or throws an error naming the file.
inline void save_json(const Json& j, const std::string& path) {
  std::ofstream f(path);
  if (!f) throw error("json: cannot open " + path + " for writing");
  f << j.dump(2, ' ', false, Json::error_handler_t::replace) << '\n';
  if (!f) throw error("json: writing " + path + " failed");
}

}  // namespace sinew::metrics
