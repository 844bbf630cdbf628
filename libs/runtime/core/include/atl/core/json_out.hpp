// JsonOut: JSON text appended to a string as it is written, for the views
// with a row per rank or pod (status of 8,000 ranks is 1.4 MB): no tree of
// objects built, dumped and freed. At 1,000 x 8 the tree cost the head
// 38 ms of a status's 48 (status_view.cpp). Its text is what
// nlohmann::json::dump(-1, ' ', false, error_handler_t::replace) writes for
// the same values: strings escaped alike (invalid UTF-8 replaced by U+FFFD),
// finite doubles as the shortest text that reads back the same (with ".0"
// when whole), NaN and infinities as null.
#pragma once

#include <charconv>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace atl {

class JsonOut {
 public:
  explicit JsonOut(std::string& out) : out_(out) {}

  JsonOut& begin_object() { return open('{'); }
  JsonOut& end_object() { return close('}'); }
  JsonOut& begin_array() { return open('['); }
  JsonOut& end_array() { return close(']'); }
  // The next member's name (in an object); its value follows.
  JsonOut& key(std::string_view name);

  JsonOut& value(std::string_view s);
  JsonOut& value(const char* s) { return value(std::string_view(s)); }
  JsonOut& value(const std::string& s) { return value(std::string_view(s)); }
  JsonOut& value(bool b);
  JsonOut& value(double d);
  template <typename Int,
            std::enable_if_t<std::is_integral_v<Int> && !std::is_same_v<Int, bool>, int> = 0>
  JsonOut& value(Int i) {
    before_value();
    char buf[24];
    out_.append(buf, std::to_chars(buf, buf + sizeof buf, i).ptr);
    return *this;
  }
  JsonOut& null();
  // A whole JSON value already written (a dump), put in as it is.
  JsonOut& raw(std::string_view json_text);

  // name and value in one: a member of the open object.
  template <typename T>
  JsonOut& member(std::string_view name, const T& v) {
    return key(name).value(v);
  }

 private:
  JsonOut& open(char c);
  JsonOut& close(char c);
  void before_value();

  std::string& out_;
  std::vector<bool> first_;  // per open object or array: nothing in it yet
  bool after_key_ = false;
};

// s as a JSON string, quotes included, appended to `out`.
void append_json_string(std::string& out, std::string_view s);

// Compact JSON text (as the head answers: no space outside strings)
// indented as nlohmann's dump(2) writes it, without building a tree: the
// members stay in the order they came (dump(2) of a parse sorts them). At
// 8,000 ranks atlctl's parse and dump of a status was most of its time.
// Nothing when the text does not balance (an unclosed string or bracket):
// the caller parses it then, for the parser's own error.
std::optional<std::string> indent_json(std::string_view compact);

}  // namespace atl
