#include "atl/core/shell.hpp"

namespace atl {

std::string shell_quote(const std::string& word) {
  if (word.empty()) return "''";
  bool plain = true;
  for (char c : word) {
    bool safe = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                std::string("@%+=:,./_-").find(c) != std::string::npos;
    plain &= safe;
  }
  if (plain) return word;
  std::string out = "'";
  for (char c : word) {
    if (c == '\'')
      out += "'\\''";
    else
      out += c;
  }
  return out + "'";
}

std::string shell_join(const std::vector<std::string>& words) {
  std::string out;
  for (const auto& w : words) {
    if (!out.empty()) out += ' ';
    out += shell_quote(w);
  }
  return out;
}

std::string command_from_words(const std::vector<std::string>& words) {
  if (words.size() == 1) return words.front();
  return shell_join(words);
}

}  // namespace atl
