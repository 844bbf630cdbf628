// Environment variables as the job carries them: ordered key -> value maps, and
// parsing of the "K=V" assignments users pass with --env.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "atl/core/expected.hpp"

namespace atl {

using EnvMap = std::map<std::string, std::string>;

bool is_valid_env_name(std::string_view name);

// "K=V" -> {K, V}; V may be empty or hold further '='.
Expected<std::pair<std::string, std::string>> parse_env_assignment(std::string_view text);

// atlctl's ENVS: "k=v" or "k1=v1,v1b;k2=v2" (';' separates pairs, a value may
// hold commas). Every pair needs a valid name; empty pairs are errors.
Expected<EnvMap> parse_env_spec(std::string_view text);

// atlctl's WORKERS: "all" (an empty list) or a comma list of pod names.
Expected<std::vector<std::string>> parse_worker_list(std::string_view text);

// "K=V" strings, as execve wants them.
std::vector<std::string> to_env_strings(const EnvMap& env);

// Parses "K=V" strings (e.g. environ); entries without '=' are skipped.
EnvMap env_from_strings(const std::vector<std::string>& entries);

}  // namespace atl
