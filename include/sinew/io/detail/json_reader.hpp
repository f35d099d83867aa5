// sinew/io/detail/json_reader.hpp: reading the JSON of weight-file headers and checkpoint manifests (and the
// golden files of the tests) with nlohmann-json, under the rules such headers need. Nesting is bounded, and a
// key that appears twice in one object is an error: Python's json keeps the last, other readers the first, so
// such a file would mean different things to different readers. A malformed document ends in a data_error
// saying what and where (the caller prefixes the file's name). Integers stay exact: a non-negative integer is
// read as a uint64 (data offsets past 2^53), never through a double.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "sinew/core/error.hpp"

namespace sinew::io::detail {

/// A parsed document; objects keep their members in the order of the text.
using json = nlohmann::ordered_json;

inline constexpr int kJsonMaxDepth = 64;

/// Parses the whole of `text` as one JSON value, or throws data_error with the reason and where.
inline json parse_json(std::string_view text) {
  std::vector<std::set<std::string, std::less<>>> keys;  // of each object being read, innermost last
  const json::parser_callback_t check = [&](int depth, json::parse_event_t event, json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start:
      case json::parse_event_t::array_start:
        if (depth >= kJsonMaxDepth)
          throw data_error("JSON nested deeper than " + std::to_string(kJsonMaxDepth) + " levels");
        if (event == json::parse_event_t::object_start) keys.emplace_back();
        break;
      case json::parse_event_t::key:
        if (!keys.back().insert(parsed.get_ref<const std::string&>()).second)
          throw data_error("the key \"" + parsed.get_ref<const std::string&>() +
                           "\" appears twice in one object (readers disagree on which counts)");
        break;
      case json::parse_event_t::object_end:
        keys.pop_back();
        break;
      default:
        break;
    }
    return true;
  };
  try {
    return json::parse(text.begin(), text.end(), check);
  } catch (const json::exception& e) {
    // Every nlohmann error the text can cause (parse_error, and out_of_range for a number such as 1e400 that
    // overflows a double; found by fuzz_safetensors): its text after the "[json.exception.<kind>.N] " tag,
    // "parse error at line 1, column 5: ..." or "number overflow parsing '1e400'".
    const std::string what = e.what();
    const auto tag_end = what.find("] ");
    throw data_error(tag_end == std::string::npos ? what : what.substr(tag_end + 2));
  }
}

/// A non-negative integer that fits in 64 bits (exactly, however large), or false.
inline bool to_u64(const json& v, std::uint64_t& out) noexcept {
  if (!v.is_number_unsigned()) return false;
  out = v.get<std::uint64_t>();
  return true;
}

/// The member `key` of object `v`, or nullptr (also when `v` is not an object).
inline const json* member(const json& v, std::string_view key) {
  if (!v.is_object()) return nullptr;
  const auto it = v.find(key);
  return it == v.end() ? nullptr : &*it;
}

}  // namespace sinew::io::detail
