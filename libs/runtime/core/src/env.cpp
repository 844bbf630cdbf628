#include "atl/core/env.hpp"

#include "atl/core/split.hpp"
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

Expected<EnvMap> parse_env_spec(std::string_view text) {
  if (text.empty()) return make_error("empty environment spec (expected k=v or \"k1=v1;k2=v2\")");
  EnvMap env;
  size_t start = 0;
  while (start <= text.size()) {
    size_t semi = text.find(';', start);
    std::string_view pair =
        text.substr(start, semi == std::string_view::npos ? std::string_view::npos : semi - start);
    if (pair.empty()) return make_error("empty pair in environment spec " + detail::quote(text));
    auto kv = parse_env_assignment(pair);
    if (!kv) return Error{kv.error()};
    env[kv->first] = kv->second;
    if (semi == std::string_view::npos) break;
    start = semi + 1;
  }
  return env;
}

Expected<std::vector<std::string>> parse_worker_list(std::string_view text) {
  std::vector<std::string> pods;
  if (text == "all") return pods;
  if (text.empty())
    return make_error("empty worker list (use all or pod names separated by commas)");
  for (std::string_view pod : split_list(text)) {
    if (pod.empty()) return make_error("empty pod name in worker list " + detail::quote(text));
    for (char c : pod) {
      bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.';
      if (!ok) return make_error("bad pod name " + detail::quote(pod) + " in worker list");
    }
    pods.emplace_back(pod);
  }
  return pods;
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
