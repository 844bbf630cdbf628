// Readable ctest names for parameterised tests: "<index>_<text>" with every
// character that gtest does not allow in a name turned into '_'.
#pragma once

#include <string>

namespace atl::test {

inline std::string param_name(size_t index, const std::string& text) {
  std::string name = std::to_string(index) + "_";
  for (char c : text.substr(0, 40)) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    name += ok ? c : '_';
  }
  return name;
}

}  // namespace atl::test
