#include "atl/supervisor/terminal_book.hpp"

#include <algorithm>

namespace atl::supervisor {

Expected<TerminalRecord> TerminalBook::open(const std::string& pod, bool pod_in_job,
                                            std::string who, Clock::time_point now) {
  if (!settings_.enabled)
    return make_error("the web terminal is off on this job (headnode --web-terminal off)");
  if (!pod_in_job) return make_error("no pod named '" + pod + "' has joined the job");
  if (open_.size() >= static_cast<std::size_t>(std::max(settings_.total_limit, 0)))
    return make_error("the job has " + std::to_string(settings_.total_limit) +
                      " terminals open already, the most a head serves: close one first");
  if (settings_.per_pod_limit <= 0 ||
      open_on(pod).size() >= static_cast<std::size_t>(settings_.per_pod_limit))
    return make_error("pod " + pod + " has " + std::to_string(settings_.per_pod_limit) +
                      " terminals open already, its limit (headnode --web-terminal-limit)");
  TerminalRecord r{TerminalId{next_id_++}, pod, std::move(who), now};
  open_.emplace(r.id, r);
  return r;
}

std::optional<TerminalRecord> TerminalBook::close(TerminalId id) {
  auto it = open_.find(id);
  if (it == open_.end()) return std::nullopt;
  TerminalRecord r = std::move(it->second);
  open_.erase(it);
  return r;
}

std::vector<TerminalRecord> TerminalBook::open_on(const std::string& pod) const {
  std::vector<TerminalRecord> out;
  for (const auto& [id, r] : open_)
    if (r.pod == pod) out.push_back(r);
  return out;
}

std::string terminal_duration(std::chrono::steady_clock::duration d) {
  auto s = std::chrono::duration_cast<std::chrono::seconds>(d).count();
  if (s < 0) s = 0;
  if (s < 60) return std::to_string(s) + " s";
  if (s < 3600) return std::to_string(s / 60) + " min " + std::to_string(s % 60) + " s";
  return std::to_string(s / 3600) + " h " + std::to_string(s % 3600 / 60) + " min";
}

}  // namespace atl::supervisor
