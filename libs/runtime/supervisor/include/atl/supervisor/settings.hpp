// SupervisorSettings: what the Supervisor is made from (the job, the head's
// address and names, Ray's commands, the limits headnode's options set):
// plain values, filled by headnode (SupervisorConfig::settings) and by tests.
#pragma once

#include <cstddef>
#include <string>

#include "atl/core/duration.hpp"
#include "atl/core/job_spec.hpp"
#include "atl/supervisor/terminal_book.hpp"

namespace atl::supervisor {

struct SupervisorSettings {
  JobSpec job;
  std::string advertised_host;  // host part of ATL_ADDRESS
  std::string head_dns_name;    // the head pod's name where it resolves (empty: the address)
  std::string head_interface;   // the network interface of advertised_host (NCCL, gloo)
  std::string ray_bin = "ray";
  std::string ray_python = "python3";
  std::string ray_token;
  Millis linger{0};                   // the ended job's dashboard stays this long
  Millis tick{100};                   // the liveness tick: a silent pod is lost within it
  long clock_ticks = 100;             // sysconf(_SC_CLK_TCK): the samples' CPU times
  std::size_t finished_kept = 10000;  // ended tasks kept (headnode --history)
  TerminalSettings terminals;         // headnode --web-terminal, --web-terminal-limit
  // The head's dashboard (empty: off), for atlctl dashboard-url: its URL and
  // the token that logs in. Whoever the control plane lets in may have both.
  std::string dashboard_url;
  std::string dashboard_token;
};

}  // namespace atl::supervisor
