#include "atl/core/json_errors.hpp"

#include <nlohmann/json.hpp>

namespace atl {

namespace {

void replace_all(std::string& s, std::string_view from, std::string_view to) {
  for (std::size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
}

// nlohmann's "syntax error while parsing object - unexpected string literal;
// expected '}'" as "unexpected string; expected '}'" (the part after " - ",
// without "last read: '...'", which repeats the user's text).
std::string what_was_wrong(const std::string& message) {
  std::string what = message;
  if (auto dash = what.find(" - "); dash != std::string::npos) what = what.substr(dash + 3);
  if (auto read = what.find("last read: "); read != std::string::npos) {
    auto end = what.find("; ", read);
    what.erase(read, end == std::string::npos ? std::string::npos : end + 2 - read);
  }
  replace_all(what, "string literal", "string");
  while (!what.empty() && (what.back() == ' ' || what.back() == ';')) what.pop_back();
  return what;
}

std::string hint(const std::string& message, std::string_view text, std::size_t byte) {
  auto has = [&](std::string_view part) { return message.find(part) != std::string::npos; };
  if (has("unexpected end of input"))
    return text.find_first_not_of(" \t\r\n") == std::string_view::npos
               ? " (the text is empty)"
               : " (the text ends early: a '}', ']' or '\"' missing?)";
  if (has("expected end of input")) return " (more text after the JSON value's end)";
  if (has("object key - unexpected '}'") || has("value - unexpected ']'"))
    return " (a ',' after the last item? JSON allows none)";
  if (has("object key")) {
    const char at = byte >= 1 && byte <= text.size() ? text[byte - 1] : '\0';
    return at == '\'' ? " (JSON takes double quotes: \"key\")"
                      : " (keys take double quotes: \"key\")";
  }
  if (has("unexpected '}'; expected ']'")) return " (a ']' missing before it?)";
  if (has("unexpected ']'; expected '}'")) return " (a '}' missing before it?)";
  if (has("; expected '}'") || has("; expected ']'")) return " (a ',' missing before it?)";
  if (has("invalid literal"))
    return " (strings take double quotes; true, false and null are lower case)";
  return "";
}

}  // namespace

std::string json_syntax_error(std::string_view text) {
  try {
    const auto doc = nlohmann::json::parse(text.begin(), text.end());
    (void)doc;
    return "";
  } catch (const nlohmann::json::parse_error& e) {
    // e.byte: 1-based, the byte where parsing stopped.
    std::size_t line = 1, column = 1;
    const std::size_t stop = std::min<std::size_t>(e.byte == 0 ? 0 : e.byte - 1, text.size());
    for (std::size_t i = 0; i < stop; ++i) {
      if (text[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    const std::string message = e.what();
    return "line " + std::to_string(line) + ", column " + std::to_string(column) + ": " +
           what_was_wrong(message) + hint(message, text, e.byte);
  } catch (const nlohmann::json::exception&) {
    return "not valid JSON";
  }
}

}  // namespace atl
