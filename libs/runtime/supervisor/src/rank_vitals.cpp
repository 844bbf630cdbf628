#include "atl/supervisor/rank_vitals.hpp"

#include <algorithm>

namespace atl::supervisor {

const char* to_string(VitalsMark m) {
  switch (m) {
    case VitalsMark::none:
      return "";
    case VitalsMark::silent:
      return "silent";
    case VitalsMark::slow:
      return "slow";
  }
  return "";
}

void RankVitals::reset(std::int32_t attempt) {
  attempt_ = attempt;
  ranks_.clear();
}

void RankVitals::observe(std::int32_t rank, const VitalsSample& s, TimePoint now) {
  Seen& seen = ranks_[rank];
  if (seen.samples.empty() || s.lines > seen.samples.back().second.lines) seen.last_line = now;
  seen.samples.emplace_back(now, s);
  // Keep the window, and the newest sample before it as the rates' base.
  while (seen.samples.size() > 2 && seen.samples[1].first <= now - options_.window)
    seen.samples.pop_front();
}

RankFigures RankVitals::own(const Seen& s, TimePoint now) const {
  RankFigures f;
  const auto& [t1, last] = s.samples.back();
  f.pid = last.pid;
  f.rss_bytes = last.rss_bytes;
  f.output_age = std::chrono::duration_cast<Millis>(now - s.last_line);
  const auto& [t0, first] = s.samples.front();
  const double seconds = std::chrono::duration<double>(t1 - t0).count();
  if (seconds > 0) {
    f.lines_per_s =
        static_cast<double>(std::max<std::int64_t>(0, last.lines - first.lines)) / seconds;
    const double cpu =
        static_cast<double>(std::max<std::int64_t>(0, last.cpu_ticks - first.cpu_ticks)) /
        static_cast<double>(options_.ticks_per_second);
    f.cpu_percent = 100.0 * cpu / seconds;
  }
  return f;
}

std::map<std::int32_t, RankFigures> RankVitals::figures(TimePoint now) const {
  std::map<std::int32_t, RankFigures> out;
  for (const auto& [rank, seen] : ranks_) out.emplace(rank, own(seen, now));
  if (out.size() < 2) return out;  // no peers: nothing to stand apart from
  // Silent: no line for silent_after while most peers printed within it.
  std::size_t talking = 0;
  for (const auto& [rank, f] : out) talking += f.output_age < options_.silent_after;
  // Slow: under slow_ratio of the median rate of the ranks with a window of
  // samples (a rank just started has no rate yet).
  std::vector<double> rates;
  for (const auto& [rank, seen] : ranks_)
    if (seen.samples.size() >= 2) rates.push_back(out[rank].lines_per_s);
  double median = 0;
  if (rates.size() >= 2) {
    std::sort(rates.begin(), rates.end());
    median = rates.size() % 2 ? rates[rates.size() / 2]
                              : (rates[rates.size() / 2 - 1] + rates[rates.size() / 2]) / 2;
  }
  for (auto& [rank, f] : out) {
    const std::size_t peers_talking = talking - (f.output_age < options_.silent_after ? 1 : 0);
    const std::size_t peers = out.size() - 1;
    if (f.output_age >= options_.silent_after && 2 * peers_talking > peers) {
      f.mark = VitalsMark::silent;
    } else if (median >= options_.slow_floor && ranks_.at(rank).samples.size() >= 2 &&
               f.lines_per_s < options_.slow_ratio * median) {
      f.mark = VitalsMark::slow;
    }
  }
  return out;
}

}  // namespace atl::supervisor
