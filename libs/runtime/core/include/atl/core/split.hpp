// "a,b,,c" -> {"a", "b", "", "c"}: every item between separators, empty ones
// included (callers name them as errors). The views point into `text`.
#pragma once

#include <string_view>
#include <vector>

namespace atl {

inline std::vector<std::string_view> split_list(std::string_view text, char separator = ',') {
  std::vector<std::string_view> items;
  for (size_t start = 0;;) {
    size_t at = text.find(separator, start);
    items.push_back(text.substr(start, at == std::string_view::npos ? at : at - start));
    if (at == std::string_view::npos) return items;
    start = at + 1;
  }
}

}  // namespace atl
