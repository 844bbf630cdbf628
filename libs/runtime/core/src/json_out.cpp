// JsonOut (json_out.hpp).
#include "atl/core/json_out.hpp"

#include <charconv>
#include <cmath>
#include <nlohmann/json.hpp>

namespace atl {

void append_json_string(std::string& out, std::string_view s) {
  // Plain printable ASCII (names, states, addresses: nearly every string of
  // a status) is copied; anything else goes through nlohmann's own escaping,
  // so control characters, UTF-8 and bytes that are not UTF-8 read exactly
  // as they did.
  for (unsigned char c : s) {
    if (c < 0x20 || c >= 0x7f || c == '"' || c == '\\') {
      out += nlohmann::json(std::string(s))
                 .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
      return;
    }
  }
  out += '"';
  out.append(s.data(), s.size());
  out += '"';
}

void JsonOut::before_value() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (!first_.empty()) {
    if (!first_.back()) out_ += ',';
    first_.back() = false;
  }
}

JsonOut& JsonOut::open(char c) {
  before_value();
  out_ += c;
  first_.push_back(true);
  return *this;
}

JsonOut& JsonOut::close(char c) {
  out_ += c;
  if (!first_.empty()) first_.pop_back();
  return *this;
}

JsonOut& JsonOut::key(std::string_view name) {
  if (!first_.empty()) {
    if (!first_.back()) out_ += ',';
    first_.back() = false;
  }
  append_json_string(out_, name);
  out_ += ':';
  after_key_ = true;
  return *this;
}

JsonOut& JsonOut::value(std::string_view s) {
  before_value();
  append_json_string(out_, s);
  return *this;
}

JsonOut& JsonOut::value(bool b) {
  before_value();
  out_ += b ? "true" : "false";
  return *this;
}

JsonOut& JsonOut::value(double d) {
  before_value();
  if (!std::isfinite(d)) {
    out_ += "null";
    return *this;
  }
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, d);
  std::string_view text(buf, ec == std::errc() ? static_cast<std::size_t>(end - buf) : 0);
  out_ += text;
  // nlohmann writes a whole double as "5.0": a reader keeps it a float.
  if (text.find_first_of(".e") == std::string_view::npos) out_ += ".0";
  return *this;
}

JsonOut& JsonOut::null() {
  before_value();
  out_ += "null";
  return *this;
}

JsonOut& JsonOut::raw(std::string_view json_text) {
  before_value();
  out_ += json_text;
  return *this;
}

std::optional<std::string> indent_json(std::string_view in) {
  std::string out;
  out.reserve(in.size() + in.size() / 2);
  std::size_t depth = 0;
  auto newline = [&] {
    out += '\n';
    out.append(depth * 2, ' ');
  };
  for (std::size_t i = 0; i < in.size(); ++i) {
    const char c = in[i];
    switch (c) {
      case '"': {
        // A string, escapes and all, as it is.
        std::size_t j = i + 1;
        while (j < in.size() && in[j] != '"') j += in[j] == '\\' ? 2 : 1;
        if (j >= in.size()) return std::nullopt;
        out.append(in.data() + i, j - i + 1);
        i = j;
        break;
      }
      case '{':
      case '[': {
        const char close = c == '{' ? '}' : ']';
        if (i + 1 < in.size() && in[i + 1] == close) {  // empty: "{}", "[]"
          out += c;
          out += close;
          ++i;
          break;
        }
        out += c;
        ++depth;
        newline();
        break;
      }
      case '}':
      case ']':
        if (depth == 0) return std::nullopt;
        --depth;
        newline();
        out += c;
        break;
      case ',':
        out += ',';
        newline();
        break;
      case ':':
        out += ": ";
        break;
      case ' ':
      case '\n':
      case '\t':
      case '\r':
        break;  // none in compact text; a dump(2) has none outside strings but its own
      default:
        out += c;
    }
  }
  if (depth != 0) return std::nullopt;
  return out;
}

}  // namespace atl
