#include "atl/supervisor/rank_vitals.hpp"

#include <algorithm>

namespace atl::supervisor {

namespace {

double median_of(std::vector<double> xs) {
  if (xs.empty()) return 0;
  std::sort(xs.begin(), xs.end());
  return xs.size() % 2 ? xs[xs.size() / 2] : (xs[xs.size() / 2 - 1] + xs[xs.size() / 2]) / 2;
}

}  // namespace

const char* to_string(VitalsMark m) {
  switch (m) {
    case VitalsMark::none:
      return "";
    case VitalsMark::silent:
      return "silent";
    case VitalsMark::slow:
      return "slow";
    case VitalsMark::straggler:
      return "straggler";
    case VitalsMark::stopped:
      return "stopped";
    case VitalsMark::uninterruptible:
      return "uninterruptible";
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
  if (s.state != 'D') {
    seen.in_d_since.reset();
  } else if (!seen.in_d_since) {
    seen.in_d_since = now;
  }
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
  // What the tree is, as last sampled: marked whatever its peers do.
  if (last.state == 'T') f.mark = VitalsMark::stopped;
  if (s.in_d_since && now - *s.in_d_since >= options_.stuck_after)
    f.mark = VitalsMark::uninterruptible;
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
  const double median = rates.size() >= 2 ? median_of(rates) : 0;
  for (auto& [rank, f] : out) {
    if (f.mark != VitalsMark::none) continue;  // stopped or uninterruptible: what it is
    const std::size_t peers_talking = talking - (f.output_age < options_.silent_after ? 1 : 0);
    const std::size_t peers = out.size() - 1;
    if (f.output_age >= options_.silent_after && 2 * peers_talking > peers) {
      f.mark = VitalsMark::silent;
    } else if (median >= options_.slow_floor && ranks_.at(rank).samples.size() >= 2 &&
               f.lines_per_s < options_.slow_ratio * median) {
      f.mark = VitalsMark::slow;
    } else if (straggles(ranks_.at(rank), now)) {
      f.mark = VitalsMark::straggler;
    }
  }
  return out;
}

std::map<std::int32_t, RankFigures> RankVitals::own_figures(TimePoint now,
                                                            std::int32_t bound) const {
  std::map<std::int32_t, RankFigures> out;
  for (auto it = ranks_.lower_bound(0); it != ranks_.end() && it->first < bound; ++it)
    out.emplace_hint(out.end(), it->first, own(it->second, now));
  return out;
}

bool RankVitals::straggles(const Seen& s, TimePoint now) const {
  return s.straggling_since && now - *s.straggling_since >= options_.straggler_after;
}

std::vector<std::pair<std::int32_t, std::string>> RankVitals::update_stragglers(TimePoint now) {
  std::vector<std::pair<std::int32_t, std::string>> news;
  std::map<std::int32_t, double> cpu;
  for (const auto& [rank, seen] : ranks_)
    if (seen.samples.size() >= 2) cpu[rank] = own(seen, now).cpu_percent;
  for (auto& [rank, seen] : ranks_) {
    auto mine = cpu.find(rank);
    bool apart = false;
    double peers_median = 0;
    if (mine != cpu.end() && cpu.size() >= 2) {
      std::vector<double> peers;
      for (const auto& [other, c] : cpu)
        if (other != rank) peers.push_back(c);
      peers_median = median_of(peers);
      apart = mine->second >= options_.straggler_ratio * peers_median &&
              mine->second >= peers_median + options_.straggler_gap;
    }
    if (!apart) {
      seen.straggling_since.reset();
      seen.said = false;
      continue;
    }
    if (!seen.straggling_since) seen.straggling_since = now;
    if (!seen.said && straggles(seen, now)) {
      seen.said = true;
      const auto held =
          std::chrono::duration_cast<std::chrono::seconds>(now - *seen.straggling_since).count();
      news.emplace_back(rank, "rank " + std::to_string(rank) + " is a straggler: CPU " +
                                  std::to_string(static_cast<int>(mine->second + 0.5)) +
                                  "% while its peers' median is " +
                                  std::to_string(static_cast<int>(peers_median + 0.5)) +
                                  "% (they wait on it), for " + std::to_string(held) + " s");
    }
  }
  return news;
}

std::vector<std::int32_t> RankVitals::stragglers(TimePoint now) const {
  std::vector<std::int32_t> out;
  for (const auto& [rank, seen] : ranks_)
    if (straggles(seen, now)) out.push_back(rank);
  return out;
}

}  // namespace atl::supervisor
