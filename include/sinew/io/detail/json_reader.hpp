// sinew/io/detail/json_reader.hpp: a small JSON parser for the headers of weight files (and the golden files of
// the tests). It never trusts its input: nesting is bounded, every read is bounds-checked, and a malformed
// document ends in a data_error that says where (the caller prefixes the file's name). A key that appears twice
// in one object is an error too: Python's json keeps the last, other readers the first, so such a file would
// mean different things to different readers.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "sinew/core/error.hpp"

namespace sinew::io::detail {

/// A parsed JSON value. Numbers keep their text, so integers read back exactly (data offsets past 2^53).
class json_value {
 public:
  struct number {
    std::string text;
  };
  using array = std::vector<json_value>;
  using object = std::vector<std::pair<std::string, json_value>>;

  json_value() = default;
  template <class T>
    requires(!std::is_same_v<T, json_value>)
  explicit json_value(T v) : v_(std::move(v)) {}

  bool is_null() const noexcept { return std::holds_alternative<std::nullptr_t>(v_); }
  bool is_string() const noexcept { return std::holds_alternative<std::string>(v_); }
  bool is_number() const noexcept { return std::holds_alternative<number>(v_); }
  bool is_array() const noexcept { return std::holds_alternative<array>(v_); }
  bool is_object() const noexcept { return std::holds_alternative<object>(v_); }

  const std::string* string() const noexcept { return std::get_if<std::string>(&v_); }
  const array* elements() const noexcept { return std::get_if<array>(&v_); }
  const object* members() const noexcept { return std::get_if<object>(&v_); }

  /// The member `key` of an object, or nullptr.
  const json_value* find(std::string_view key) const noexcept {
    if (const object* o = members())
      for (const auto& [k, v] : *o)
        if (k == key) return &v;
    return nullptr;
  }

  /// A non-negative integer that fits in 64 bits, or false.
  bool to_u64(std::uint64_t& out) const noexcept {
    const number* n = std::get_if<number>(&v_);
    if (!n || n->text.empty()) return false;
    std::uint64_t x = 0;
    for (char c : n->text) {
      if (c < '0' || c > '9') return false;
      const std::uint64_t d = std::uint64_t(c - '0');
      if (x > (UINT64_MAX - d) / 10) return false;
      x = x * 10 + d;
    }
    out = x;
    return true;
  }
  /// Any number, as a double (or false).
  bool to_double(double& out) const noexcept {
    const number* n = std::get_if<number>(&v_);
    if (!n) return false;
    try {
      std::size_t used = 0;
      out = std::stod(n->text, &used);
      return used == n->text.size();
    } catch (...) {
      return false;
    }
  }

 private:
  std::variant<std::nullptr_t, bool, number, std::string, array, object> v_{nullptr};
};

class json_parser {
 public:
  static constexpr int kMaxDepth = 64;

  /// Parses the whole of `text` as one JSON value; throws data_error "<what> at byte N" otherwise.
  static json_value parse(std::string_view text) {
    json_parser p(text);
    p.skip_space();
    json_value v = p.value(0);
    p.skip_space();
    if (p.pos_ != text.size()) p.fail("unexpected text after the JSON value");
    return v;
  }

 private:
  explicit json_parser(std::string_view text) : s_(text) {}

  [[noreturn]] void fail(const std::string& what) const {
    throw data_error(what + " at byte " + std::to_string(pos_));
  }
  bool at_end() const noexcept { return pos_ >= s_.size(); }
  char peek() const { return at_end() ? '\0' : s_[pos_]; }
  void skip_space() {
    while (!at_end() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r')) ++pos_;
  }
  void expect(char c) {
    if (peek() != c) fail(std::string("expected '") + c + "'");
    ++pos_;
  }
  void literal(std::string_view word) {
    if (s_.substr(pos_, word.size()) != word) fail("invalid literal");
    pos_ += word.size();
  }

  json_value value(int depth) {
    if (depth > kMaxDepth) fail("JSON nested deeper than " + std::to_string(kMaxDepth) + " levels");
    switch (peek()) {
      case '{': return object(depth);
      case '[': return array(depth);
      case '"': return json_value(string());
      case 't': literal("true"); return json_value(true);
      case 'f': literal("false"); return json_value(false);
      case 'n': literal("null"); return json_value();
      default:
        if (peek() == '-' || (peek() >= '0' && peek() <= '9')) return json_value(number());
        fail(at_end() ? "the JSON ends early" : "unexpected character");
    }
  }

  json_value object(int depth) {
    expect('{');
    json_value::object members;
    skip_space();
    if (peek() == '}') return ++pos_, json_value(std::move(members));
    for (;;) {
      skip_space();
      std::string key = string();
      skip_space();
      expect(':');
      skip_space();
      members.emplace_back(std::move(key), value(depth + 1));
      skip_space();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      expect('}');
      if (const std::string* twice = duplicate_key(members))
        fail("the key \"" + *twice + "\" appears twice (readers disagree on which counts) in the object that ends");
      return json_value(std::move(members));
    }
  }

  /// A key that two members of `members` share, or nullptr. Sorting keeps a header of many tensors linear-log.
  static const std::string* duplicate_key(const json_value::object& members) {
    if (members.size() < 2) return nullptr;
    std::vector<const std::string*> keys;
    keys.reserve(members.size());
    for (const auto& m : members) keys.push_back(&m.first);
    std::sort(keys.begin(), keys.end(), [](const std::string* a, const std::string* b) { return *a < *b; });
    for (std::size_t i = 1; i < keys.size(); ++i)
      if (*keys[i] == *keys[i - 1]) return keys[i];
    return nullptr;
  }

  json_value array(int depth) {
    expect('[');
    json_value::array elements;
    skip_space();
    if (peek() == ']') return ++pos_, json_value(std::move(elements));
    for (;;) {
      skip_space();
      elements.push_back(value(depth + 1));
      skip_space();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      expect(']');
      return json_value(std::move(elements));
    }
  }

  json_value::number number() {
    const std::size_t begin = pos_;
    while (!at_end() && std::string_view("+-0123456789.eE").find(s_[pos_]) != std::string_view::npos) ++pos_;
    return {std::string(s_.substr(begin, pos_ - begin))};
  }

  std::string string() {
    expect('"');
    std::string out;
    for (;;) {
      if (at_end()) fail("a string is not closed");
      const char c = s_[pos_++];
      if (c == '"') return out;
      if (static_cast<unsigned char>(c) < 0x20) fail("a control character inside a string");
      if (c != '\\') {
        out += c;
        continue;
      }
      if (at_end()) fail("a string is not closed");
      switch (const char e = s_[pos_++]) {
        case '"': case '\\': case '/': out += e; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': append_utf8(out, code_point()); break;
        default: fail("an invalid escape in a string");
      }
    }
  }

  unsigned hex4() {
    if (pos_ + 4 > s_.size()) fail("a \\u escape ends early");
    unsigned v = 0;
    for (int i = 0; i < 4; ++i) {
      const char c = s_[pos_++];
      v <<= 4;
      if (c >= '0' && c <= '9') v |= unsigned(c - '0');
      else if (c >= 'a' && c <= 'f') v |= unsigned(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F') v |= unsigned(c - 'A' + 10);
      else fail("an invalid \\u escape");
    }
    return v;
  }
  unsigned code_point() {
    unsigned cp = hex4();
    if (cp >= 0xD800 && cp < 0xDC00 && s_.substr(pos_, 2) == "\\u") {
      pos_ += 2;
      const unsigned low = hex4();
      if (low < 0xDC00 || low >= 0xE000) fail("an unpaired surrogate in a \\u escape");
      cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
    }
    return cp;
  }
  static void append_utf8(std::string& out, unsigned cp) {
    if (cp < 0x80) {
      out += char(cp);
    } else if (cp < 0x800) {
      out += char(0xC0 | (cp >> 6));
      out += char(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += char(0xE0 | (cp >> 12));
      out += char(0x80 | ((cp >> 6) & 0x3F));
      out += char(0x80 | (cp & 0x3F));
    } else {
      out += char(0xF0 | (cp >> 18));
      out += char(0x80 | ((cp >> 12) & 0x3F));
      out += char(0x80 | ((cp >> 6) & 0x3F));
      out += char(0x80 | (cp & 0x3F));
    }
  }

  std::string_view s_;
  std::size_t pos_ = 0;
};

}  // namespace sinew::io::detail
