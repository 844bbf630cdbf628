// TerminalBook: the web terminals open into the job's pods. The head's
// dashboard asks for one (a logged-in session, for a pod), the book says yes
// or why not (the terminal is off, the pod is not in the job, the pod has its
// limit open already) and hands out an id; a terminal closes once, whoever
// notices first (the browser left, the shell exited, the pod was lost). What
// it returns is what the timeline says of each.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "atl/core/expected.hpp"

namespace atl::supervisor {

struct TerminalId {
  std::int64_t value = 0;
  friend bool operator<(TerminalId a, TerminalId b) { return a.value < b.value; }
  friend bool operator==(TerminalId a, TerminalId b) { return a.value == b.value; }
};

struct TerminalSettings {
  bool enabled = true;    // headnode --web-terminal on|off
  int per_pod_limit = 4;  // headnode --web-terminal-limit N
  // The whole job's: each open terminal holds one of the dashboard's HTTP
  // threads (256), which its pages and API need too.
  int total_limit = 64;
};

// One terminal, as the timeline tells of it.
struct TerminalRecord {
  TerminalId id;
  std::string pod;
  std::string who;  // the session and address that opened it
  std::chrono::steady_clock::time_point opened;
};

class TerminalBook {
 public:
  using Clock = std::chrono::steady_clock;
  explicit TerminalBook(TerminalSettings settings) : settings_(settings) {}

  // A terminal for `who` into `pod`; `pod_in_job`: the pod is one of the
  // job's and has joined. The refusal is one line for the browser.
  Expected<TerminalRecord> open(const std::string& pod, bool pod_in_job, std::string who,
                                Clock::time_point now);
  // The terminal is gone: its record (for the timeline), once; nothing for an
  // id that is not open (closed already, or never opened).
  std::optional<TerminalRecord> close(TerminalId id);
  // Terminal `id` while it is open, or null.
  const TerminalRecord* find(TerminalId id) const {
    auto it = open_.find(id);
    return it == open_.end() ? nullptr : &it->second;
  }
  // The terminals open into `pod`, oldest first.
  std::vector<TerminalRecord> open_on(const std::string& pod) const;
  std::size_t open_count() const { return open_.size(); }
  const TerminalSettings& settings() const { return settings_; }

 private:
  TerminalSettings settings_;
  std::int64_t next_id_ = 1;
  std::map<TerminalId, TerminalRecord> open_;
};

// "12 s", "3 min 4 s", "2 h 5 min": how long a terminal was open.
std::string terminal_duration(std::chrono::steady_clock::duration d);

}  // namespace atl::supervisor
