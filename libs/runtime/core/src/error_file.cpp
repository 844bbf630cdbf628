#include "atl/core/error_file.hpp"

#include <nlohmann/json.hpp>

namespace atl {

namespace {

std::optional<std::string> first_line(const std::string& message) {
  std::size_t start = 0;
  while (start <= message.size()) {
    std::size_t end = message.find('\n', start);
    if (end == std::string::npos) end = message.size();
    std::string line = message.substr(start, end - start);
    auto first = line.find_first_not_of(" \t\r");
    if (first != std::string::npos) {
      line = line.substr(first, line.find_last_not_of(" \t\r") - first + 1);
      if (line.size() > kErrorSummaryMax) {
        // Cut on a UTF-8 character's first byte, never inside one.
        std::size_t cut = kErrorSummaryMax;
        while (cut > 0 && (static_cast<unsigned char>(line[cut]) & 0xC0) == 0x80) --cut;
        line = line.substr(0, cut) + "\u2026";
      }
      return line;
    }
    start = end + 1;
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> error_file_summary(std::string_view text) {
  auto doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) return std::nullopt;
  auto it = doc.find("message");
  if (it == doc.end()) return std::nullopt;
  const nlohmann::json* message = &*it;
  if (message->is_object()) {
    auto inner = message->find("message");
    if (inner == message->end()) return std::nullopt;
    message = &*inner;
  }
  if (!message->is_string()) return std::nullopt;
  return first_line(message->get<std::string>());
}

}  // namespace atl
