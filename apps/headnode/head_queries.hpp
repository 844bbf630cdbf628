// What the head's HTTP servers (the dashboard, /metrics) ask the actors, from
// their own threads: one asker actor does the requests (HTTP threads only
// anon_send to it: CAF 0.17 and long-lived foreign threads, see libatl) and
// each call waits for its answer, never longer than the timeout.
#pragma once

#include <caf/fwd.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "atl/core/expected.hpp"
#include "atl/core/status_page.hpp"

namespace atl::headnode {

class HeadQueries {
 public:
  HeadQueries(caf::actor_system& sys, const caf::actor& supervisor, const caf::actor& sink,
              std::chrono::milliseconds timeout = std::chrono::seconds(5));
  ~HeadQueries();
  HeadQueries(const HeadQueries&) = delete;
  HeadQueries& operator=(const HeadQueries&) = delete;

  // The supervisor's info: atlctl status --json (by default every rank and pod).
  Expected<std::string> status(StatusPage page = {});
  Expected<std::string> events();  // the job's timeline: atlctl events --json
  // A burn's or check's round figures as JSON; an unknown or dropped run:
  // the supervisor's line, and `missing` set.
  Expected<std::string> run_figures(std::int32_t run, bool* missing);
  Expected<std::string> log_stats();  // the log sink's byte and line counters per stream
  Expected<std::string> progress();   // the hang watch's state and each rank's progress age
  // atlctl diagnose [-r ranks] as JSON (every rank's stack, grouped): up to
  // 30 s. `code` gets the supervisor's answer code (a bad -r, no ranks).
  Expected<std::string> diagnose(const std::string& ranks, std::int32_t* code);
  Expected<std::string> prometheus();  // both of the above as Prometheus text

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace atl::headnode
