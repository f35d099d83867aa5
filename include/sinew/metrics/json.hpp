// sinew/metrics/json.hpp: a small JSON value for reports (--json FILE): numbers, strings, booleans,
// arrays and objects that keep their insertion order.
#pragma once

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "sinew/core/error.hpp"

namespace sinew::metrics {

/// A JSON value (null, bool, number, string, array, object) for reports: objects keep their keys' order.
class Json {
 public:
  /// A JSON array.
  using array = std::vector<Json>;
  /// A JSON object: keys in insertion order.
  using object = std::vector<std::pair<std::string, Json>>;

  /// null
  Json() : v_(nullptr) {}
  /// null
  Json(std::nullptr_t) : v_(nullptr) {}
  /// true or false
  Json(bool b) : v_(b) {}
  /// A number: a float is kept as the shortest decimal that reads back as it; written as an integer when
  /// whole (below 1e15), else with 9 significant digits; NaN and infinities are written as null.
  template <class T>
    requires std::is_arithmetic_v<T>
  Json(T x) : v_(double(x)) {
    if constexpr (std::is_same_v<T, float>) {
      // The shortest decimal that reads back as the float: 0.05f is written 0.05, not 0.0500000007.
      char buf[32];
      const auto end = std::to_chars(buf, buf + sizeof buf - 1, x).ptr;
      *end = '\0';
      v_ = std::strtod(buf, nullptr);
    }
  }
  /// A string (escaped when written).
  /// @{
  Json(const char* s) : v_(std::string(s)) {}
  Json(std::string s) : v_(std::move(s)) {}
  Json(std::string_view s) : v_(std::string(s)) {}
  /// @}
  /// An array.
  Json(array a) : v_(std::make_shared<array>(std::move(a))) {}
  /// An object.
  Json(object o) : v_(std::make_shared<object>(std::move(o))) {}

  /// An empty object.
  static Json make_object() { return Json(object{}); }
  /// An empty array.
  static Json make_array() { return Json(array{}); }

  /// Sets key in an object (replacing an earlier value), keeping first-insertion order.
  Json& set(const std::string& key, Json value) {
    auto& o = as_object();
    for (auto& [k, v] : o)
      if (k == key) return v = std::move(value);
    o.emplace_back(key, std::move(value));
    return o.back().second;
  }
  /// Appends to an array.
  Json& push_back(Json value) {
    auto& a = as_array();
    a.push_back(std::move(value));
    return a.back();
  }

  /// The JSON text, `indent` spaces per level (0: one line).
  std::string dump(int indent = 2) const {
    std::ostringstream out;
    write(out, indent, 0);
    return out.str();
  }

  /// Writes the value to `path`, or throws an error naming the file.
  void save(const std::string& path) const {
    std::ofstream f(path);
    if (!f) throw error("json: cannot open " + path + " for writing");
    f << dump() << '\n';
    if (!f) throw error("json: writing " + path + " failed");
  }

 private:
  array& as_array() {
    if (auto* a = std::get_if<std::shared_ptr<array>>(&v_)) return **a;
    throw error("json: push_back on a value that is not an array");
  }
  object& as_object() {
    if (auto* o = std::get_if<std::shared_ptr<object>>(&v_)) return **o;
    throw error("json: set on a value that is not an object");
  }

  static void write_string(std::ostream& out, const std::string& s) {
    out << '"';
    for (char c : s) {
      switch (c) {
        case '"': out << "\\\""; break;
        case '\\': out << "\\\\"; break;
        case '\n': out << "\\n"; break;
        case '\t': out << "\\t"; break;
        case '\r': out << "\\r"; break;
        default:
          if (static_cast<unsigned char>(c) < 0x20) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\u%04x", c);
            out << buf;
          } else {
            out << c;
          }
      }
    }
    out << '"';
  }

  void write(std::ostream& out, int indent, int depth) const {
    const std::string pad(std::size_t(indent) * (depth + 1), ' '), end_pad(std::size_t(indent) * depth, ' ');
    const char* nl = indent > 0 ? "\n" : "";
    std::visit(
        [&](const auto& x) {
          using T = std::decay_t<decltype(x)>;
          if constexpr (std::is_same_v<T, std::nullptr_t>) {
            out << "null";
          } else if constexpr (std::is_same_v<T, bool>) {
            out << (x ? "true" : "false");
          } else if constexpr (std::is_same_v<T, double>) {
            if (!std::isfinite(x)) {
              out << "null";  // JSON has no NaN or infinity
            } else if (x == std::floor(x) && std::fabs(x) < 1e15) {
              out << std::int64_t(x);
            } else {
              char buf[32];
              std::snprintf(buf, sizeof buf, "%.9g", x);
              out << buf;
            }
          } else if constexpr (std::is_same_v<T, std::string>) {
            write_string(out, x);
          } else if constexpr (std::is_same_v<T, std::shared_ptr<array>>) {
            if (x->empty()) return void(out << "[]");
            out << '[' << nl;
            for (std::size_t i = 0; i < x->size(); ++i) {
              out << pad;
              (*x)[i].write(out, indent, depth + 1);
              out << (i + 1 < x->size() ? "," : "") << nl;
            }
            out << end_pad << ']';
          } else {
            if (x->empty()) return void(out << "{}");
            out << '{' << nl;
            for (std::size_t i = 0; i < x->size(); ++i) {
              out << pad;
              write_string(out, (*x)[i].first);
              out << (indent > 0 ? ": " : ":");
              (*x)[i].second.write(out, indent, depth + 1);
              out << (i + 1 < x->size() ? "," : "") << nl;
            }
            out << end_pad << '}';
          }
        },
        v_);
  }

  std::variant<std::nullptr_t, bool, double, std::string, std::shared_ptr<array>, std::shared_ptr<object>> v_;
};

}  // namespace sinew::metrics

