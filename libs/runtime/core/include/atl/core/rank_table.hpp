// RankTable: the records of a set of ranks (one attempt of the job's user
// code, or the ranks of one `atlctl run`), with how many have started and how
// many have ended kept as they change. "Have all started?" and "have all
// ended?" are asked on every report a rank sends, so they must not walk the
// table: n reports over n ranks cost O(n^2) that way (10^9 steps at 32,000
// ranks, seconds of a supervisor that then answers nothing). Pure: no actors.
//
// A record's `started` and `done` change only through the table (mark_started,
// mark_done, end_remaining) so that the counts follow; readers get const
// records.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

namespace atl {

struct RankRecord {
  std::string pod;
  std::int32_t attempt =
      0;  // the start its reports must carry (ray mode: the driver's can be newer)
  std::int32_t pid = 0;
  bool started = false;
  bool done = false;
  std::int32_t code = 0;
  std::int32_t signal = 0;
  std::string note;  // why it ended, when not by itself (or why it never started)
};

class RankTable {
 public:
  using Map = std::map<std::int32_t, RankRecord>;
  using const_iterator = Map::const_iterator;

  // A fresh record for `stream` (replacing any): on `pod`, not started, not done.
  void add(std::int32_t stream, std::string pod, std::int32_t attempt = 0);
  void clear();

  // The rank reported its process started (pid). No-op for an unknown stream.
  void mark_started(std::int32_t stream, std::int32_t pid);
  // The rank ended: its exit, or `note` for why it ended otherwise. The first
  // end counts; false for an unknown stream or one that had ended already.
  bool mark_done(std::int32_t stream, std::int32_t code, std::int32_t signal, std::string note);
  // Ends every rank that has not ended, with `note` (abandoned, ...); how many.
  std::size_t end_remaining(const std::string& note);

  // Every rank started or ended (a rank that ended without starting will not start).
  bool all_started() const { return started_or_done_ == records_.size(); }
  bool all_done() const { return done_ == records_.size(); }
  std::size_t done_count() const { return done_; }
  // Neither started nor ended (running = size - starting - done).
  std::size_t starting_count() const { return records_.size() - started_or_done_; }

  std::size_t size() const { return records_.size(); }
  bool empty() const { return records_.empty(); }
  std::size_t count(std::int32_t stream) const { return records_.count(stream); }
  const_iterator find(std::int32_t stream) const { return records_.find(stream); }
  const_iterator begin() const { return records_.begin(); }
  const_iterator end() const { return records_.end(); }

 private:
  void uncount(const RankRecord& r);
  void count_in(const RankRecord& r);

  Map records_;
  std::size_t started_or_done_ = 0;
  std::size_t done_ = 0;
};

}  // namespace atl
