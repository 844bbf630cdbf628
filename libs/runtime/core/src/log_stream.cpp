#include "atl/core/log_stream.hpp"

#include <limits>

namespace atl {

StreamId user_code_stream(std::int32_t key) {
  if (key == kDriverStream) return StreamId::driver();
  if (key == kRayHeadStream) return StreamId::ray_head();
  return StreamId::of_rank(key);
}

std::optional<std::int32_t> user_code_key(const StreamId& id) {
  switch (id.kind) {
    case StreamKind::rank:
      return id.rank;
    case StreamKind::driver:
      return kDriverStream;
    case StreamKind::ray_head:
      return kRayHeadStream;
    default:
      return std::nullopt;
  }
}

std::string stream_name(const StreamId& id) {
  switch (id.kind) {
    case StreamKind::rank:
      return "rank-" + std::to_string(id.rank);
    case StreamKind::driver:
      return "driver";
    case StreamKind::ray_head:
      return "ray-head";
    case StreamKind::run:
      return "run-" + std::to_string(id.run) + "-rank-" + std::to_string(id.rank);
    case StreamKind::task:
      return "task-" + std::to_string(id.run);
    case StreamKind::head_log:
      return "head";
    case StreamKind::pod_log:
      return "pod-worker-" + std::to_string(id.rank);
  }
  return "stream-" + std::to_string(static_cast<int>(id.kind));
}

namespace {

// A non-negative decimal without a leading zero (but "0"), within int32.
std::optional<std::int32_t> number_at(const std::string& s, std::size_t& at) {
  std::size_t start = at;
  std::int64_t value = 0;
  while (at < s.size() && s[at] >= '0' && s[at] <= '9') {
    value = value * 10 + (s[at] - '0');
    if (value > std::numeric_limits<std::int32_t>::max()) return std::nullopt;
    ++at;
  }
  if (at == start || (s[start] == '0' && at - start > 1)) return std::nullopt;
  return static_cast<std::int32_t>(value);
}

bool take(const std::string& s, std::size_t& at, const char* word) {
  std::string w(word);
  if (s.compare(at, w.size(), w) != 0) return false;
  at += w.size();
  return true;
}

}  // namespace

std::optional<StreamId> parse_stream_name(const std::string& name) {
  if (name == "driver") return StreamId::driver();
  if (name == "ray-head") return StreamId::ray_head();
  if (name == "head") return StreamId::head_log();
  std::size_t at = 0;
  std::optional<StreamId> id;
  if (take(name, at, "rank-")) {
    if (auto rank = number_at(name, at)) id = StreamId::of_rank(*rank);
  } else if (take(name, at, "task-")) {
    if (auto task = number_at(name, at); task && *task >= 1) id = StreamId::of_task(*task);
  } else if (take(name, at, "pod-worker-")) {
    if (auto pod = number_at(name, at)) id = StreamId::pod_log(*pod);
  } else if (take(name, at, "run-")) {
    auto run = number_at(name, at);
    if (run && *run >= 1 && take(name, at, "-rank-"))
      if (auto rank = number_at(name, at)) id = StreamId::of_run(*run, *rank);
  }
  if (!id || at != name.size()) return std::nullopt;
  return id;
}

std::string stream_prefix(const StreamId& id) {
  switch (id.kind) {
    case StreamKind::rank:
    case StreamKind::run:
      return "[rank " + std::to_string(id.rank) + "] ";
    case StreamKind::driver:
      return "[driver] ";
    case StreamKind::ray_head:
      return "[ray-head] ";
    case StreamKind::task:
      return "[task " + std::to_string(id.run) + "] ";
    case StreamKind::head_log:
      return "[head] ";
    case StreamKind::pod_log:
      return "[pod worker-" + std::to_string(id.rank) + "] ";
  }
  return "[" + stream_name(id) + "] ";
}

}  // namespace atl
