#include "atl/core/job_spec.hpp"

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <set>
#include <vector>

#include "atl/core/byte_size.hpp"
#include "atl/core/json_errors.hpp"
#include "atl/core/suggest.hpp"
#include "parse_util.hpp"

namespace atl {

using nlohmann::json;

std::string_view to_string(JobMode mode) {
  switch (mode) {
    case JobMode::spmd:
      return "spmd";
    case JobMode::driver:
      return "driver";
    case JobMode::ray:
      return "ray";
  }
  return "unknown";
}

std::string_view to_string(OnHang on_hang) {
  return on_hang == OnHang::restart ? "restart" : "report";
}

std::string_view to_string(OnStraggler on_straggler) {
  return on_straggler == OnStraggler::taint ? "taint" : "report";
}

Expected<OnStraggler> parse_on_straggler(std::string_view text) {
  if (text == "report") return OnStraggler::report;
  if (text == "taint") return OnStraggler::taint;
  return make_error("bad on_straggler " + detail::quote(text) + ": expected report or taint");
}

namespace {

// The signals a rank may be warned with, by name.
constexpr std::pair<const char*, int> kSignals[] = {
    {"HUP", SIGHUP},   {"INT", SIGINT},     {"QUIT", SIGQUIT}, {"USR1", SIGUSR1},
    {"USR2", SIGUSR2}, {"ALRM", SIGALRM},   {"TERM", SIGTERM}, {"CONT", SIGCONT},
    {"URG", SIGURG},   {"WINCH", SIGWINCH}, {"KILL", SIGKILL}, {"STOP", SIGSTOP}};

}  // namespace

Expected<StopWarning> parse_stop_warning(std::string_view text) {
  const size_t at = text.find('@');
  auto bad = [&](const std::string& why) {
    return make_error("bad stop signal " + detail::quote(text) + ": " + why +
                      " (SIG@TIME, e.g. USR1@30s)");
  };
  if (at == std::string_view::npos) return bad("no '@'");
  std::string_view name = text.substr(0, at);
  if (name.substr(0, 3) == "SIG") name.remove_prefix(3);
  StopWarning w;
  for (const auto& [n, sig] : kSignals)
    if (name == n) w.signal = sig;
  if (w.signal == 0 && !name.empty() &&
      std::all_of(name.begin(), name.end(), [](char c) { return c >= '0' && c <= '9'; }) &&
      name.size() <= 2)
    w.signal = std::stoi(std::string(name));
  if (w.signal <= 0 || w.signal >= 65) return bad("unknown signal");
  if (w.signal == SIGKILL || w.signal == SIGSTOP)
    return bad("SIGKILL and SIGSTOP cannot be caught: pick one a rank can handle");
  auto lead = parse_duration(text.substr(at + 1));
  if (!lead) return bad(lead.error());
  if (lead->count() <= 0) return bad("the time must be above 0");
  w.lead = *lead;
  return w;
}

std::string to_string(const StopWarning& w) {
  if (w.signal == 0) return "none";
  for (const auto& [n, sig] : kSignals)
    if (sig == w.signal) return std::string(n) + "@" + format_duration(w.lead);
  return std::to_string(w.signal) + "@" + format_duration(w.lead);
}

Expected<double> parse_hang_factor(std::string_view text) {
  const std::string t(text);
  char* end = nullptr;
  const double k = t.empty() ? -1 : std::strtod(t.c_str(), &end);
  if (t.empty() || end != t.c_str() + t.size() || !(k >= 0 && k <= 100))
    return make_error("bad factor " + detail::quote(text) +
                      ": expected a number from 0 (no learned timeout) to 100, e.g. 4");
  return k;
}

Expected<OnHang> parse_on_hang(std::string_view text) {
  if (text == "restart") return OnHang::restart;
  if (text == "report") return OnHang::report;
  return make_error("bad on_hang " + detail::quote(text) + ": expected restart or report");
}

Expected<JobMode> parse_job_mode(std::string_view text) {
  if (text == "spmd") return JobMode::spmd;
  if (text == "driver") return JobMode::driver;
  if (text == "ray") return JobMode::ray;
  // Other launchers' words for atl's modes: torchrun's and mpirun's one
  // process per rank is spmd.
  std::string hint;
  if (text == "torchrun" || text == "mpi" || text == "mpirun" || text == "ddp")
    hint = " (" + std::string(text) + "'s one process per rank is spmd)";
  return make_error("bad mode " + detail::quote(text) + ": expected spmd, driver or ray" + hint);
}

namespace {

// Specs are small; these bound what a hostile or broken file can cost.
constexpr size_t kMaxSpecBytes = 1 << 20;
constexpr int kMaxSpecDepth = 16;

// The value as JSON, cut short for an error line (invalid UTF-8 replaced).
std::string short_dump(const json& v) {
  std::string text = v.dump(-1, ' ', false, json::error_handler_t::replace);
  return detail::quote(text);
}

// Each reader takes the JSON value of field `name` and stores it or says why not.
Error field_error(std::string_view name, std::string_view what, const json& v) {
  return make_error("job spec: field '" + std::string(name) + "' " + std::string(what) + ", got " +
                    short_dump(v));
}

// How deep arrays and objects nest, counted outside strings, before parsing
// (a recursive walk of 100k levels would overflow the stack).
int nesting_depth(std::string_view text) {
  int depth = 0, deepest = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (in_string) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      deepest = std::max(deepest, ++depth);
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
  return deepest;
}

Status read_int(const json& v, std::string_view name, int min, int max, int& out) {
  if (!v.is_number_integer()) return field_error(name, "must be an integer", v);
  auto n = v.get<std::int64_t>();
  if (n < min || n > max) {
    return field_error(name,
                       "must be between " + std::to_string(min) + " and " + std::to_string(max), v);
  }
  out = static_cast<int>(n);
  return Ok{};
}

// A NUL byte ("\u0000") would cut the text short where the OS takes it: the
// command run, a variable's value or a directory would silently be another.
Status no_nul(std::string_view name, const std::string& text) {
  if (text.find('\0') == std::string::npos) return Ok{};
  return make_error("job spec: field " + detail::quote(name) +
                    " holds a NUL byte (\\u0000), which no command, variable or path can carry");
}

Status read_string(const json& v, std::string_view name, std::string& out) {
  if (!v.is_string()) return field_error(name, "must be a string", v);
  if (auto ok = no_nul(name, v.get_ref<const std::string&>()); !ok) return ok;
  out = v.get<std::string>();
  return Ok{};
}

// A string field that a parser turns into its value (parse: text ->
// Expected<T>), its error named after the field.
template <class Parse, class T>
Status read_parsed(const json& v, std::string_view name, Parse parse, T& out) {
  std::string text;
  if (auto read = read_string(v, name, text); !read) return read;
  auto parsed = parse(text);
  if (!parsed) return make_error("job spec: field '" + std::string(name) + "': " + parsed.error());
  out = *parsed;
  return Ok{};
}

Status read_bool(const json& v, std::string_view name, bool& out) {
  if (!v.is_boolean()) return field_error(name, "must be true or false", v);
  out = v.get<bool>();
  return Ok{};
}

Status read_size(const json& v, std::string_view name, std::int64_t& out) {
  if (v.is_number_integer() && v.get<std::int64_t>() >= 0) {
    out = v.get<std::int64_t>();
    return Ok{};
  }
  if (!v.is_string())
    return field_error(name, "must be a size such as \"16Gi\" or a byte count", v);
  auto s = parse_byte_size(v.get<std::string>());
  if (!s) return make_error("job spec: field '" + std::string(name) + "': " + s.error());
  out = *s;
  return Ok{};
}

Status read_duration(const json& v, std::string_view name, Millis& out) {
  // A bare number is refused: 10 could be seconds, milliseconds or minutes.
  if (!v.is_string())
    return field_error(name, "must be a duration with its unit, such as \"300s\" or \"5m\"", v);
  auto d = parse_duration(v.get<std::string>());
  if (!d) return make_error("job spec: field '" + std::string(name) + "': " + d.error());
  out = *d;
  return Ok{};
}

Status read_env(const json& v, std::string_view name, EnvMap& out) {
  if (!v.is_object()) return field_error(name, "must be an object of strings", v);
  for (const auto& [key, value] : v.items()) {
    std::string field = std::string(name) + "." + key;
    if (!is_valid_env_name(key)) {
      return make_error("job spec: field " + detail::quote(field) +
                        " is not a valid environment variable name");
    }
    // Text only: 4 would be taken, but 1e3 or 0.1 would reach the rank as
    // whatever the JSON library prints, and true as "true" where "1" was meant.
    if (!value.is_string()) return field_error(field, "must be a string (quote it: \"4\")", value);
    if (auto ok = no_nul(field, value.get_ref<const std::string&>()); !ok) return ok;
    out[key] = value.get<std::string>();
  }
  return Ok{};
}

template <class Reader>
Status read_object(const json& v, std::string_view name, Reader&& reader) {
  if (!v.is_object()) return field_error(name, "must be an object", v);
  for (const auto& [key, value] : v.items()) {
    auto st = reader(key, value);
    if (!st) return st;
  }
  return Ok{};
}

// The fields each object of a spec takes (the readers below): a mistyped
// one is named with the field it is nearest to.
const std::vector<std::string>& known_fields(std::string_view parent) {
  static const std::vector<std::string> top{"job_id",
                                            "mode",
                                            "entrypoint",
                                            "tensorboard",
                                            "workers",
                                            "nproc_per_node",
                                            "env",
                                            "runtime_env",
                                            "spec",
                                            "placement",
                                            "ready_timeout",
                                            "grace",
                                            "master_port",
                                            "ray_port",
                                            "ray_dashboard_port",
                                            "spare_workers",
                                            "max_restarts",
                                            "restart_on_failure",
                                            "heartbeat_interval",
                                            "heartbeat_timeout",
                                            "hang_timeout",
                                            "ray_ready_timeout",
                                            "on_hang",
                                            "on_straggler",
                                            "stop_signal",
                                            "hang_factor"};
  static const std::vector<std::string> node{"cpus", "gpus", "memory", "shm"};
  static const std::vector<std::string> placement{"strategy", "bundle"};
  return parent == "spec" ? node : parent == "placement" ? placement : top;
}

Error unknown_field(std::string_view parent, std::string_view key) {
  std::string full =
      parent.empty() ? std::string(key) : std::string(parent) + "." + std::string(key);
  return make_error("job spec: unknown field " + detail::quote(full) +
                    did_you_mean(key, known_fields(parent)));
}

}  // namespace

Expected<JobSpec> parse_job_spec_json(std::string_view json_text, JobSpec spec) {
  if (json_text.size() > kMaxSpecBytes)
    return make_error("job spec: " + std::to_string(json_text.size()) + " bytes; at most " +
                      std::to_string(kMaxSpecBytes) + " are taken");
  if (nesting_depth(json_text) > kMaxSpecDepth)
    return make_error("job spec: nested deeper than " + std::to_string(kMaxSpecDepth) + " levels");
  // A key given twice is refused, not silently "last one wins".
  std::vector<std::set<std::string>> keys;
  std::string duplicate;
  json::parser_callback_t track = [&](int, json::parse_event_t event, json& parsed) {
    if (event == json::parse_event_t::object_start) keys.emplace_back();
    if (event == json::parse_event_t::object_end && !keys.empty()) keys.pop_back();
    if (event == json::parse_event_t::key && !keys.empty() && duplicate.empty() &&
        !keys.back().insert(parsed.get<std::string>()).second)
      duplicate = parsed.get<std::string>();
    return true;
  };
  json doc = json::parse(json_text, track, /*allow_exceptions=*/false);
  if (doc.is_discarded())
    return make_error("job spec: not valid JSON: " + json_syntax_error(json_text));
  if (!duplicate.empty())
    return make_error("job spec: field " + detail::quote(duplicate) + " is given twice");
  auto st = read_object(doc, "<top level>", [&](const std::string& key, const json& v) -> Status {
    if (key == "job_id") return read_string(v, key, spec.job_id);
    if (key == "mode") {
      std::string m;
      if (auto s = read_string(v, key, m); !s) return s;
      auto mode = parse_job_mode(m);
      if (!mode) return make_error("job spec: field 'mode': " + mode.error());
      spec.mode = *mode;
      return Ok{};
    }
    if (key == "entrypoint") return read_string(v, key, spec.entrypoint);
    if (key == "tensorboard") {
      if (auto s = read_string(v, key, spec.tensorboard_logdir); !s) return s;
      if (spec.tensorboard_logdir.empty() || spec.tensorboard_logdir.size() > 4096)
        return make_error("job spec: field 'tensorboard': a directory, 1 to 4096 characters");
      return Ok{};
    }
    if (key == "workers") return read_int(v, key, 0, kMaxWorkers, spec.workers);
    if (key == "nproc_per_node") return read_int(v, key, 1, kMaxRanksPerNode, spec.nproc_per_node);
    if (key == "env") return read_env(v, key, spec.env);
    if (key == "runtime_env") {
      return read_object(v, key, [&](const std::string& k, const json& rv) -> Status {
        if (k == "env_vars") return read_env(rv, "runtime_env.env_vars", spec.runtime_env_vars);
        if (k == "working_dir") return read_string(rv, "runtime_env.working_dir", spec.working_dir);
        // Ray applies the rest of a runtime_env itself (pip, conda, py_modules,
        // ...): taken as they are in ray mode ("mode" sorts before
        // "runtime_env", so it is known here), refused elsewhere.
        if (spec.mode == JobMode::ray) {
          spec.ray_runtime_env[k] = rv.dump();
          return Ok{};
        }
        return make_error("job spec: field " + detail::quote("runtime_env." + k) +
                          " is only taken in mode ray (Ray applies it); this job's mode is " +
                          std::string(to_string(spec.mode)));
      });
    }
    if (key == "spec") {
      return read_object(v, key, [&](const std::string& k, const json& sv) -> Status {
        if (k == "cpus") return read_int(sv, "spec.cpus", 0, 1 << 20, spec.node_spec.cpus);
        if (k == "gpus") return read_int(sv, "spec.gpus", 0, 1024, spec.node_spec.gpus);
        if (k == "memory") return read_size(sv, "spec.memory", spec.node_spec.memory);
        if (k == "shm") return read_size(sv, "spec.shm", spec.node_spec.shm);
        return unknown_field("spec", k);
      });
    }
    if (key == "placement") {
      RankPlacementSpec placement;
      bool has_bundle = false;
      auto read = read_object(v, key, [&](const std::string& k, const json& pv) -> Status {
        if (k == "strategy") {
          std::string text;
          if (auto s = read_string(pv, "placement.strategy", text); !s) return s;
          auto strategy = parse_placement_strategy(text);
          if (!strategy)
            return make_error("job spec: field 'placement.strategy': " + strategy.error());
          placement.strategy = *strategy;
          return Ok{};
        }
        if (k == "bundle") {
          auto bundle = parse_bundle(pv.dump());
          if (!bundle) return make_error("job spec: field 'placement.bundle': " + bundle.error());
          placement.bundle = *bundle;
          has_bundle = true;
          return Ok{};
        }
        return unknown_field("placement", k);
      });
      if (!read) return read;
      if (!has_bundle)
        return make_error(
            "job spec: field 'placement' needs a 'bundle' (what one rank takes, "
            "e.g. {\"CPU\": 1, \"GPU\": 1})");
      spec.placement = placement;
      return Ok{};
    }
    if (key == "ready_timeout") return read_duration(v, key, spec.ready_timeout);
    if (key == "grace") return read_duration(v, key, spec.grace);
    if (key == "master_port") {
      spec.master_port_given = true;
      return read_int(v, key, 1, 65535, spec.master_port);
    }
    if (key == "ray_port") {
      spec.ray_port_given = true;
      return read_int(v, key, 1, 65535, spec.ray_port);
    }
    if (key == "ray_dashboard_port") return read_int(v, key, 0, 65535, spec.ray_dashboard_port);
    if (key == "spare_workers") return read_int(v, key, 0, kMaxWorkers, spec.spare_workers);
    if (key == "max_restarts") return read_int(v, key, 0, kMaxRestarts, spec.max_restarts);
    if (key == "restart_on_failure") return read_bool(v, key, spec.restart_on_failure);
    if (key == "heartbeat_interval") return read_duration(v, key, spec.heartbeat.interval);
    if (key == "heartbeat_timeout") return read_duration(v, key, spec.heartbeat.timeout);
    if (key == "hang_timeout") return read_duration(v, key, spec.hang_timeout);
    if (key == "ray_ready_timeout") return read_duration(v, key, spec.ray_ready_timeout);
    if (key == "on_hang") return read_parsed(v, key, parse_on_hang, spec.on_hang);
    if (key == "on_straggler") return read_parsed(v, key, parse_on_straggler, spec.on_straggler);
    if (key == "stop_signal") return read_parsed(v, key, parse_stop_warning, spec.stop_warning);
    if (key == "hang_factor") {
      if (!v.is_number()) return make_error("job spec: field 'hang_factor' must be a number");
      spec.hang_factor = v.get<double>();
      return Ok{};
    }
    return unknown_field("", key);
  });
  if (!st) return Error{st.error()};
  return spec;
}

Status validate_job_id(std::string_view id) {
  // The id as the error line shows it: at most 64 characters of it.
  std::string shown = id.size() > 64 ? std::string(id.substr(0, 61)) + "..." : std::string(id);
  if (id.empty() || id.size() > 40) {
    return make_error("bad job id '" + shown + "': must be 1-40 characters (" +
                      std::to_string(id.size()) + " given)");
  }
  auto ok_char = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
  };
  for (char c : id) {
    if (!ok_char(c)) {
      return make_error("bad job id '" + std::string(id) +
                        "': only lowercase letters, digits and '-' are allowed");
    }
  }
  if (id.front() == '-' || id.back() == '-') {
    return make_error("bad job id '" + std::string(id) + "': must not start or end with '-'");
  }
  return Ok{};
}

namespace {

// What atl sets for every rank (torchrun's contract, torchelastic's names,
// atl's own): a job's value for one of them would be replaced without a word.
constexpr std::string_view kAtlsOwnEnv[] = {"RANK",
                                            "LOCAL_RANK",
                                            "WORLD_SIZE",
                                            "LOCAL_WORLD_SIZE",
                                            "NODE_RANK",
                                            "GROUP_RANK",
                                            "GROUP_WORLD_SIZE",
                                            "ROLE_NAME",
                                            "ROLE_RANK",
                                            "ROLE_WORLD_SIZE",
                                            "TORCHELASTIC_RUN_ID",
                                            "TORCHELASTIC_RESTART_COUNT",
                                            "TORCHELASTIC_MAX_RESTARTS",
                                            "TORCHELASTIC_USE_AGENT_STORE",
                                            "ATL_RESTART_COUNT",
                                            "ATL_ADDRESS",
                                            "ATL_JOB_ID",
                                            "ATL_POD_NAME"};

Status no_atls_own_env(const EnvMap& env, std::string_view field) {
  for (std::string_view name : kAtlsOwnEnv)
    if (env.count(std::string(name)))
      return make_error("job spec: field " +
                        detail::quote(std::string(field) + "." + std::string(name)) +
                        ": atl sets " + std::string(name) +
                        " for each process itself (as torchrun does); remove it");
  return Ok{};
}

}  // namespace

Status validate_job_spec(const JobSpec& spec) {
  if (auto st = validate_job_id(spec.job_id); !st) return st;
  if (auto st = no_atls_own_env(spec.env, "env"); !st) return st;
  if (auto st = no_atls_own_env(spec.runtime_env_vars, "runtime_env.env_vars"); !st) return st;
  if (spec.entrypoint.find_first_not_of(" \t\n") == std::string::npos) {
    return make_error(
        "job spec: field 'entrypoint' is empty: give --entrypoint CMD or CMD after --");
  }
  if (spec.mode == JobMode::spmd && spec.workers < 1) {
    return make_error("job spec: field 'workers' must be at least 1 in spmd mode");
  }
  if (spec.workers < 0 || spec.workers > kMaxWorkers)
    return make_error("job spec: field 'workers' must be between 0 and " +
                      std::to_string(kMaxWorkers));
  if (spec.nproc_per_node < 1 || spec.nproc_per_node > kMaxRanksPerNode)
    return make_error("job spec: field 'nproc_per_node' must be between 1 and " +
                      std::to_string(kMaxRanksPerNode));
  if (static_cast<std::int64_t>(spec.workers) * spec.nproc_per_node > kMaxWorldSize)
    return make_error(
        "job spec: workers x nproc_per_node (" +
        std::to_string(static_cast<std::int64_t>(spec.workers) * spec.nproc_per_node) +
        ") is more than the " + std::to_string(kMaxWorldSize) + " ranks a job may have");
  if (spec.node_spec.cpus < 0 || spec.node_spec.gpus < 0 || spec.node_spec.gpus > 1024)
    return make_error("job spec: field 'spec.cpus'/'spec.gpus' out of range");
  if (spec.placement) {
    if (spec.mode != JobMode::spmd)
      return make_error("job spec: field 'placement' places spmd ranks; this job's mode is " +
                        std::string(to_string(spec.mode)) +
                        " (its driver makes placement groups itself)");
    auto gpu = spec.placement->bundle.find(std::string(kGpu));
    if (gpu != spec.placement->bundle.end() && gpu->second % kResourceUnit != 0)
      return make_error("job spec: field 'placement.bundle': a rank takes whole GPUs (" +
                        format_amount(gpu->second) + " asked)");
  } else if (spec.node_spec.gpus > 0 && spec.node_spec.gpus % spec.nproc_per_node != 0) {
    return make_error("job spec: field 'spec.gpus' (" + std::to_string(spec.node_spec.gpus) +
                      ") must be a multiple of nproc_per_node (" +
                      std::to_string(spec.nproc_per_node) + ")");
  }
  if (spec.master_port < 1 || spec.master_port > 65535) {
    return make_error("job spec: field 'master_port' must be between 1 and 65535");
  }
  if (spec.ready_timeout.count() <= 0) {
    return make_error("job spec: field 'ready_timeout' must be positive");
  }
  if (spec.spare_workers < 0 ||
      static_cast<std::int64_t>(spec.workers) + spec.spare_workers > kMaxWorkers)
    return make_error("job spec: field 'spare_workers' must be between 0 and " +
                      std::to_string(kMaxWorkers) + " - workers");
  if (spec.max_restarts < 0 || spec.max_restarts > kMaxRestarts)
    return make_error("job spec: field 'max_restarts' must be between 0 and " +
                      std::to_string(kMaxRestarts));
  if (auto hb = validate_heartbeats(spec.heartbeat); !hb)
    return make_error("job spec: field 'heartbeat_timeout'/'heartbeat_interval': " + hb.error());
  if (spec.heartbeat.timeout > std::chrono::hours(1))
    return make_error("job spec: field 'heartbeat_timeout' must be at most 1h");
  // The watch reads progress with the heartbeats: it needs a few of them.
  if (spec.hang_timeout.count() != 0 && spec.hang_timeout < 2 * spec.heartbeat.interval)
    return make_error(
        "job spec: field 'hang_timeout' must be 0 (off) or at least two "
        "heartbeat intervals (" +
        format_duration(2 * spec.heartbeat.interval) + ")");
  if (spec.ray_ready_timeout < std::chrono::seconds(1))
    return make_error("job spec: field 'ray_ready_timeout' must be at least 1s");
  if (!(spec.hang_factor >= 0 && spec.hang_factor <= 100))
    return make_error(
        "job spec: field 'hang_factor' must be between 0 (no learned timeout) and 100");
  for (auto [name, d] : {std::pair{"ready_timeout", spec.ready_timeout},
                         {"grace", spec.grace},
                         {"hang_timeout", spec.hang_timeout},
                         {"ray_ready_timeout", spec.ray_ready_timeout},
                         {"stop_signal", spec.stop_warning.lead}}) {
    if (d.count() < 0 || d > kMaxDuration)
      return make_error(std::string("job spec: field '") + name + "' must be between 0 and " +
                        format_duration(kMaxDuration));
  }
  return Ok{};
}

Status check_node_matches_spec(const NodeResources& spec, const NodeResources& node) {
  auto differs = [](const char* field, std::int64_t want, std::int64_t have, bool bytes) {
    auto show = [&](std::int64_t v) { return bytes ? format_byte_size(v) : std::to_string(v); };
    return make_error(std::string(field) + ": the pod has " + show(have) +
                      ", the job's spec asks for " + show(want));
  };
  if (spec.cpus > 0 && node.cpus != spec.cpus) return differs("cpus", spec.cpus, node.cpus, false);
  if (spec.gpus > 0 && node.gpus != spec.gpus) return differs("gpus", spec.gpus, node.gpus, false);
  if (spec.memory > 0 && node.memory != spec.memory)
    return differs("memory", spec.memory, node.memory, true);
  if (spec.shm > 0 && node.shm != spec.shm) return differs("shm", spec.shm, node.shm, true);
  return Ok{};
}

std::vector<std::string> pod_flags_for_spec(const NodeResources& spec) {
  std::vector<std::string> flags;
  if (spec.cpus > 0) flags.insert(flags.end(), {"--cpus", std::to_string(spec.cpus)});
  if (spec.gpus > 0) flags.insert(flags.end(), {"--gpus", std::to_string(spec.gpus)});
  if (spec.memory > 0) flags.insert(flags.end(), {"--memory", std::to_string(spec.memory)});
  if (spec.shm > 0) flags.insert(flags.end(), {"--shm", std::to_string(spec.shm)});
  return flags;
}

std::string make_job_id(std::mt19937_64& rng) {
  static constexpr char kAlphabet[] = "abcdefghijklmnopqrstuvwxyz0123456789";
  std::uniform_int_distribution<int> pick(0, 35);
  std::string id = "jo-";
  for (int i = 0; i < 16; ++i) id += kAlphabet[pick(rng)];
  return id;
}

std::string head_pod_name(std::string_view job_id) { return std::string(job_id) + "-head-0"; }

std::string worker_pod_name(std::string_view job_id, int index) {
  return std::string(job_id) + "-worker-" + std::to_string(index);
}

}  // namespace atl
