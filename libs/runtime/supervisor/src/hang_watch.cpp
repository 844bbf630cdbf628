#include "atl/supervisor/hang_watch.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace atl::supervisor {

namespace {

std::string seconds(Millis d) {
  const auto ms = d.count();
  if (ms % 1000 == 0) return std::to_string(ms / 1000) + " s";
  return std::to_string(ms / 1000) + "." + std::to_string(ms % 1000 / 100) + " s";
}

std::string rank_list(const std::vector<std::int32_t>& ranks) {
  std::string out;
  for (auto r : ranks) out += (out.empty() ? "" : ",") + std::to_string(r);
  return out;
}

std::string rank_words(const std::vector<std::int32_t>& ranks) {
  return (ranks.size() == 1 ? "rank " : "ranks ") + rank_list(ranks);
}

Millis since(HangWatch::TimePoint then, HangWatch::TimePoint now) {
  return std::chrono::duration_cast<Millis>(now - then);
}

std::string bytes_per_second(double b) {
  char text[32];
  if (b >= 1 << 20)
    std::snprintf(text, sizeof text, "%.1f MiB/s", b / (1 << 20));
  else if (b >= 1 << 10)
    std::snprintf(text, sizeof text, "%.1f KiB/s", b / (1 << 10));
  else
    std::snprintf(text, sizeof text, "%.0f B/s", b);
  return text;
}

constexpr std::size_t kMaxGaps = 256;

}  // namespace

HangWatch::HangWatch(Millis timeout) : HangWatch(Options{timeout}) {}

HangWatch::HangWatch(Options options) : options_(options) {}

void HangWatch::start(const std::vector<std::int32_t>& ranks, TimePoint now) {
  ranks_.clear();
  for (auto r : ranks) ranks_[r] = Rank{RankProgress{}, now, now, now, {}, false};
  started_ = last_progress_ = now;
  progressed_ = false;
  gaps_.clear();
  idle_timeout_said_ = Millis(0);
  idle_looked_ = false;
  suspect_since_.reset();
  hung_said_ = harmless_said_ = false;
  watching_ = options_.timeout.count() > 0 && !ranks_.empty();
}

void HangWatch::stop() {
  watching_ = false;
  suspect_since_.reset();
}

bool HangWatch::observe(std::int32_t rank, const RankProgress& p, TimePoint now) {
  auto it = ranks_.find(rank);
  if (it == ranks_.end()) return false;
  Rank& r = it->second;
  // A counter that changed either way is activity: one that went back is a
  // process replaced within the rank, counting from zero again.
  const bool progressed = p.output_lines != r.last.output_lines || p.steps != r.last.steps;
  if (progressed) {
    r.progressed = now;
    if (now > last_progress_) {
      // The job's cadence: the gaps between its progress, the start-up's
      // (before the first progress) left out, and, once learned, silences
      // the idle timeout already judged (an evaluation rank 0 worked through,
      // a wait): they are no steps, and would stretch the next detection.
      const Millis gap = since(last_progress_, now);
      if (progressed_ && (!learned() || gap < idle_timeout())) {
        gaps_.push_back(gap);
        if (gaps_.size() > kMaxGaps) gaps_.pop_front();
      }
      last_progress_ = now;
    }
    progressed_ = true;
  }
  const bool went_back = p.cpu_ticks < r.last.cpu_ticks || p.io_bytes < r.last.io_bytes;
  if (went_back) r.window.clear();
  r.window.push_back({now, p.cpu_ticks, p.io_bytes});
  while (r.window.size() > 2 && r.window[1].at <= now - options_.window) r.window.pop_front();
  if (p.state != r.last.state) r.state_since = now;
  r.last = p;
  r.sampled = true;
  if (went_back || working(r, now)) r.worked = now;
  return progressed;
}

double HangWatch::cpu_share(const Rank& r) const {
  if (r.window.size() < 2) return 0;
  const auto span = std::chrono::duration<double>(r.window.back().at - r.window.front().at).count();
  if (span <= 0) return 0;
  return static_cast<double>(r.window.back().cpu_ticks - r.window.front().cpu_ticks) /
         static_cast<double>(options_.ticks_per_second) / span;
}

double HangWatch::io_per_second(const Rank& r) const {
  if (r.window.size() < 2) return 0;
  const auto span = std::chrono::duration<double>(r.window.back().at - r.window.front().at).count();
  if (span <= 0) return 0;
  return static_cast<double>(r.window.back().io_bytes - r.window.front().io_bytes) / span;
}

std::optional<bool> HangWatch::past(const Rank& r, double cpu, std::int64_t io) const {
  if (r.window.size() < 2 || r.window.back().at - r.window.front().at < options_.window / 2)
    return std::nullopt;
  const double window_s = std::chrono::duration<double>(options_.window).count();
  return cpu_share(r) >= cpu || io_per_second(r) * window_s >= static_cast<double>(io);
}

bool HangWatch::working(const Rank& r, TimePoint now) const {
  (void)now;
  // Until two samples span half the window, nothing is known: counted as
  // working (no early verdict on a rank just seen).
  const auto moved = past(r, options_.busy_cpu, options_.busy_io);
  if (!moved) return true;
  if (r.last.state == 'T') return false;  // stopped: what it gained was before
  return *moved;
}

bool HangWatch::judged_working(const Rank& r, TimePoint now) const {
  if (!suspect_since_) return working(r, now);
  if (r.was_working) return true;
  // Nothing new to go by since the period began: as it was.
  return past(r, options_.look_cpu, options_.look_io).value_or(false);
}

HangWatch::TimePoint HangWatch::judged_worked(const Rank& r, TimePoint now) const {
  if (!suspect_since_) return r.worked;
  return judged_working(r, now) && !r.was_working ? now : r.worked_before;
}

void HangWatch::begin_suspect(TimePoint now, bool long_silent) {
  for (auto& [rank, r] : ranks_) {
    r.was_working = r.sampled && working(r, now);
    r.worked_before = r.worked;
  }
  suspect_since_ = now;
  suspect_long_ = long_silent;
}

bool HangWatch::working(std::int32_t rank, TimePoint now) const {
  auto it = ranks_.find(rank);
  return it != ranks_.end() && it->second.sampled && working(it->second, now);
}

bool HangWatch::every_rank_idle_now(TimePoint now) const {
  return std::all_of(ranks_.begin(), ranks_.end(), [&](const auto& entry) {
    return entry.second.sampled && !judged_working(entry.second, now);
  });
}

Millis HangWatch::step_p99() const {
  if (gaps_.empty()) return Millis(0);
  std::vector<Millis> sorted(gaps_.begin(), gaps_.end());
  std::sort(sorted.begin(), sorted.end());
  const std::size_t at = (sorted.size() * 99 + 99) / 100 - 1;  // ceil(0.99 n) - 1
  return sorted[std::min(at, sorted.size() - 1)];
}

bool HangWatch::learned() const { return options_.factor > 0 && gaps_.size() >= options_.min_gaps; }

Millis HangWatch::idle_timeout() const {
  if (!learned()) return options_.timeout;
  const auto from_steps =
      Millis(static_cast<Millis::rep>(options_.factor * static_cast<double>(step_p99().count())));
  return std::min(options_.timeout, std::max(options_.floor, from_steps));
}

std::optional<Millis> HangWatch::idle_timeout_news() {
  if (!learned()) return std::nullopt;
  const Millis now = idle_timeout();
  const auto said = idle_timeout_said_.count();
  if (said != 0 && std::abs(now.count() - said) * 4 < said) return std::nullopt;
  idle_timeout_said_ = now;
  return now;
}

std::optional<HangWatch::Verdict> HangWatch::stuck(TimePoint now) const {
  // Stuck: stopped, or in uninterruptible sleep with no I/O moving, for half
  // the idle timeout at least (a D state of a moment is a disk read), while
  // other ranks are not.
  const Millis idle_to = idle_timeout();
  std::vector<std::int32_t> stuck;
  std::string how;
  for (const auto& [rank, r] : ranks_) {
    const char s = r.last.state;
    const bool held = now - r.state_since >= idle_to / 2;
    if (held && (s == 'T' || (s == 'D' && !working(r, now)))) {
      stuck.push_back(rank);
      if (stuck.size() <= 3)
        how += std::string(how.empty() ? "" : ", ") + "rank " + std::to_string(rank) +
               (s == 'T' ? " stopped (T)" : " in uninterruptible sleep (D) with no I/O");
    }
  }
  if (!stuck.empty() && stuck.size() < ranks_.size()) {
    if (stuck.size() > 3) how += " and " + std::to_string(stuck.size() - 3) + " more";
    return Verdict{Verdict::Kind::hung, stuck,
                   how + " while the other " + std::to_string(ranks_.size() - stuck.size()) +
                       " ranks made no progress for " + seconds(idle_to)};
  }
  return std::nullopt;
}

std::optional<HangWatch::Verdict> HangWatch::all_idle(TimePoint now) const {
  // Every rank sampled, none working since the silence began (less the
  // window that still held its last work): ranks never sampled (fake ranks
  // of a simulated pod, a node that cannot read /proc) prove nothing.
  const Millis idle_to = idle_timeout();
  const bool idle = std::all_of(ranks_.begin(), ranks_.end(), [&](const auto& entry) {
    return entry.second.sampled && !judged_working(entry.second, now) &&
           now - judged_worked(entry.second, now) >= idle_to - options_.window;
  });
  if (!idle) return std::nullopt;
  return Verdict{Verdict::Kind::hung,
                 {},
                 "every rank idle (no CPU time, no I/O, no output) for " +
                     seconds(since(last_progress_, now))};
}

bool HangWatch::plainly_idle(const Rank& r) const {
  // Below half the working bar in CPU, and no more I/O than a look costs:
  // a rank at 0.7% of a core (2 clock ticks in 3 s) where its peers are at
  // 1.7% (5 ticks) computes alike, whatever side of the bar each fell on.
  return past(r, options_.busy_cpu / 2, options_.look_io) == false;
}

std::optional<HangWatch::Verdict> HangWatch::busy(TimePoint now) const {
  // The working ranks against the waiting ones: a rank neither judged
  // working nor plainly idle now leaves the split unclear, and no verdict.
  std::vector<std::int32_t> working_ranks;
  std::size_t waiting = 0;
  for (const auto& [rank, r] : ranks_) {
    if (!r.sampled) return std::nullopt;
    if (judged_working(r, now))
      working_ranks.push_back(rank);
    else if (plainly_idle(r))
      ++waiting;
    else
      return std::nullopt;
  }
  if (working_ranks.empty() || waiting == 0) return std::nullopt;
  return Verdict{Verdict::Kind::hung, working_ranks,
                 rank_words(working_ranks) + " busy for " + seconds(options_.timeout) + " while " +
                     std::to_string(waiting) + (waiting == 1 ? " rank waits" : " ranks wait")};
}

std::optional<HangWatch::Verdict> HangWatch::check(TimePoint now) {
  if (!watching_) return std::nullopt;
  const Millis silent = since(last_progress_, now);
  const Millis idle_to = idle_timeout();
  if (silent < idle_to) {
    idle_looked_ = false;
    if (!suspect_since_) return std::nullopt;
    suspect_since_.reset();
    return Verdict{Verdict::Kind::recovered, {}, "progress again"};
  }
  const bool long_silent = silent >= options_.timeout;
  if (!hung_said_) {
    if (auto hung = stuck(now)) {
      if (!suspect_since_) begin_suspect(now, long_silent);
      hung_said_ = true;
      return hung;
    }
  }
  if (!long_silent && !every_rank_idle_now(now)) {
    // A rank works (an evaluation, a checkpoint, a slow step): it has the
    // configured timeout. A suspect period of idleness ends quietly.
    if (suspect_since_ && !hung_said_) suspect_since_.reset();
    return std::nullopt;
  }
  // Idle ranks whose stacks named no one were looked at once this silence:
  // the next look is at the configured timeout (a job waiting on purpose,
  // say for a download, costs one diagnosis, not one every idle timeout).
  if (!long_silent && idle_looked_) return std::nullopt;
  const Millis period = long_silent ? options_.timeout : idle_to;
  // The configured timeout reached begins a period of its own, whatever the
  // idle one before it.
  const bool new_period =
      !suspect_since_ || (long_silent && !suspect_long_) || now - *suspect_since_ >= period;
  if (!new_period) return std::nullopt;
  begin_suspect(now, long_silent);
  hung_said_ = harmless_said_ = false;
  return Verdict{
      Verdict::Kind::suspect,
      {},
      "no rank made progress for " + seconds(silent) + (long_silent ? "" : ", every rank idle")};
}

std::optional<HangWatch::Verdict> HangWatch::diagnosed(const std::vector<std::int32_t>& outliers,
                                                       const std::string& why, TimePoint now) {
  if (!watching_ || !suspect_since_ || hung_said_) return std::nullopt;
  std::vector<std::int32_t> known;
  for (auto r : outliers)
    if (ranks_.count(r)) known.push_back(r);
  std::sort(known.begin(), known.end());
  known.erase(std::unique(known.begin(), known.end()), known.end());
  const bool long_silent = since(last_progress_, now) >= options_.timeout;
  if (!known.empty() && known.size() < ranks_.size()) {
    const bool any_working = std::any_of(known.begin(), known.end(), [&](std::int32_t r) {
      return judged_working(ranks_.at(r), now);
    });
    if (any_working && !long_silent) {
      // Rank 0 evaluating or checkpointing while the others wait on it.
      if (harmless_said_) return std::nullopt;
      harmless_said_ = true;
      return Verdict{Verdict::Kind::harmless,
                     {},
                     rank_words(known) + " works while the others wait: left alone up to the " +
                         "hang timeout (" + seconds(options_.timeout) + ")"};
    }
    hung_said_ = true;
    std::string reason = why.empty() ? rank_words(known) + " stand apart from the rest" : why;
    if (any_working) {
      // "rank 1 in f (x.py) while ..." -> "rank 1 busy for 5 s in f (x.py) while ..."
      const std::string busy = " busy for " + seconds(options_.timeout);
      const std::string who = rank_words(known);
      if (reason.rfind(who + " in ", 0) == 0)
        reason.insert(who.size(), busy);
      else
        reason = who + busy + ": " + reason;
    }
    return Verdict{Verdict::Kind::hung, known, reason};
  }
  // No one named: every rank idle is evidence enough only at the configured
  // timeout (before it, ranks may all wait on purpose); working ranks past
  // it while the rest wait are busy.
  if (long_silent) {
    if (auto idle = all_idle(now)) {
      hung_said_ = true;
      return idle;
    }
    if (auto b = busy(now)) {
      hung_said_ = true;
      return b;
    }
  } else if (every_rank_idle_now(now)) {
    // The job's cadence learned (it made steps, and stopped for k x its p99
    // step gap): every rank idle since, and their stacks stood still with no
    // one apart (all in one collective a rank skipped, all deadlocked
    // alike). Hung, with no one to blame; a job that waits on purpose touches
    // its progress file (or sets --hang-factor 0).
    if (learned()) {
      if (auto idle = all_idle(now)) {
        hung_said_ = true;
        idle->reason += ", no stack standing apart (p99 step " + seconds(step_p99()) + ")";
        return idle;
      }
    }
    idle_looked_ = true;
    if (harmless_said_) return std::nullopt;
    harmless_said_ = true;
    return Verdict{Verdict::Kind::harmless,
                   {},
                   "every rank idle for " + seconds(since(last_progress_, now)) +
                       " and no stack stands apart: left alone up to the hang timeout (" +
                       seconds(options_.timeout) + ")"};
  }
  if (harmless_said_) return std::nullopt;
  harmless_said_ = true;
  return Verdict{Verdict::Kind::harmless,
                 {},
                 "no rank made progress for " + seconds(since(last_progress_, now)) +
                     ", but every rank computes alike: no action"};
}

std::optional<Millis> HangWatch::progress_age(std::int32_t rank, TimePoint now) const {
  auto it = ranks_.find(rank);
  if (it == ranks_.end()) return std::nullopt;
  return since(it->second.progressed, now);
}

std::string HangWatch::evidence(const std::vector<std::int32_t>& ranks, TimePoint now) const {
  std::string out;
  for (auto rank : ranks) {
    auto it = ranks_.find(rank);
    if (it == ranks_.end()) continue;
    const Rank& r = it->second;
    out += (out.empty() ? "" : "; ") + std::string("rank ") + std::to_string(rank) + ": ";
    if (!r.sampled) {
      out += "never sampled";
      continue;
    }
    out += std::string(1, r.last.state) + ", CPU " +
           std::to_string(static_cast<int>(cpu_share(r) * 100 + 0.5)) + "%, I/O " +
           bytes_per_second(io_per_second(r)) + ", " +
           (working(r, now) ? "working" : "idle for " + seconds(since(r.worked, now))) +
           ", no progress for " + seconds(since(r.progressed, now));
  }
  return out;
}

}  // namespace atl::supervisor
