// JobStore: the supervisor's durable state in SQLite (<state-dir>/state.db,
// WAL): the job's state, attempt and restart count, each counted fault, the
// taints and the timeline. A head killed and started again on the same state
// dir reads it back and resumes the job.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "atl/core/expected.hpp"
#include "atl/core/restart_policy.hpp"
#include "atl/core/taints.hpp"

struct sqlite3;

namespace atl::os {

struct StoredEvent {
  std::int64_t unix_ms = 0;
  std::string kind;
  std::string text;
};

struct JobRecord {
  std::string state;  // as to_string(JobState) wrote it
  int attempt = 0;    // the last attempt started
  int restarts = 0;   // restarts used
  std::vector<Fault> faults;
  std::map<std::string, Taint> taints;
  std::vector<StoredEvent> events;
};

// The attempt a head that resumes `r` starts with: the next one, so that the
// earlier attempts' log directories stay as they were.
inline int resumed_attempt(const JobRecord& r) { return r.attempt + 1; }

// Fault kinds as stored (to_string) and read back; an unknown name is an error.
Expected<FaultKind> parse_fault_kind(const std::string& text);

class JobStore {
 public:
  // Opens (creating it and its tables if needed) the database at `path`.
  static Expected<std::unique_ptr<JobStore>> open(const std::string& path);
  ~JobStore();
  JobStore(const JobStore&) = delete;
  JobStore& operator=(const JobStore&) = delete;

  // The jobs stored here, by id (a head's state dir holds its one job).
  Expected<std::vector<std::string>> job_ids();

  // The job's record, or nothing when this job was never stored here.
  Expected<std::optional<JobRecord>> load(const std::string& job_id);

  // Replaces the job's state, counters, faults and taints in one transaction
  // (events are appended separately).
  Status save(const std::string& job_id, const JobRecord& record);
  // The timeline is bounded: past kEventsKept events of a job the oldest go
  // (trimmed once per tenth of that many added), and load() reads the newest
  // kEventsLoaded (what the head's timeline holds in memory).
  static constexpr std::size_t kEventsKept = 100000;
  static constexpr std::size_t kEventsLoaded = 10000;
  Status add_event(const std::string& job_id, const StoredEvent& event);
  // Many events in one transaction (the journal writer's batches): all or none.
  Status add_events(const std::string& job_id, const std::vector<StoredEvent>& events);
  // Other bounds than the defaults (tests).
  void limit_events(std::size_t kept, std::size_t loaded);

  // Forgets everything about the job but its events (a job submitted anew).
  Status reset(const std::string& job_id);

 private:
  explicit JobStore(sqlite3* db) : db_(db) {}
  Status exec(const std::string& sql);
  Status insert_event(const std::string& job_id, const StoredEvent& event);
  Status trim_events(const std::string& job_id);
  sqlite3* db_;
  std::size_t events_kept_ = kEventsKept;
  std::size_t events_loaded_ = kEventsLoaded;
  std::size_t added_since_trim_ = 0;
};

}  // namespace atl::os
