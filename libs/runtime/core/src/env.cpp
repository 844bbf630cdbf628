#include "atl/core/env.hpp"

#include "parse_util.hpp"

namespace atl {

bool is_valid_env_name(std::string_view name) {
  if (name.empty()) return false;
  auto alpha = [](char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_'; };
  if (!alpha(name[0])) return false;
  for (char c : name) {
    if (!alpha(c) && !(c >= '0' && c <= '9')) return false;
  }
  return true;
}

Expected<std::pair<std::string, std::string>> parse_env_assignment(std::string_view text) {
  auto eq = text.find('=');
  if (eq == std::string_view::npos) {
    return make_error("bad environment assignment " + detail::quote(text) + ": expected KEY=VALUE");
  }
  std::string_view key = text.substr(0, eq);
  if (!is_valid_env_name(key)) {
    return make_error("bad environment variable name " + detail::quote(key) + " in " +
                      detail::quote(text));
  }
  return std::make_pair(std::string(key), std::string(text.substr(eq + 1)));
}

std::vector<std::string> to_env_strings(const EnvMap& env) {
  std::vector<std::string> out;
  out.reserve(env.size());
  for (const auto& [k, v] : env) out.push_back(k + "=" + v);
  return out;
}

EnvMap env_from_strings(const std::vector<std::string>& entries) {
  EnvMap env;
  for (const auto& e : entries) {
    auto eq = e.find('=');
    if (eq == std::string::npos || eq == 0) continue;
    env[e.substr(0, eq)] = e.substr(eq + 1);
  }
  return env;
}

}  // namespace atl
