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

JsonOut& JsonOut::signed_value(std::int64_t i) {
  before_value();
  char buf[24];
  auto end = std::to_chars(buf, buf + sizeof buf, i).ptr;
  out_.append(buf, end);
  return *this;
}

JsonOut& JsonOut::unsigned_value(std::uint64_t i) {
  before_value();
  char buf[24];
  auto end = std::to_chars(buf, buf + sizeof buf, i).ptr;
  out_.append(buf, end);
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

}  // namespace atl
