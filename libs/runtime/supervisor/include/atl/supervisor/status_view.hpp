// StatusView: what atlctl status -v/--json, events, taint list, diagnose,
// the dashboard and /metrics show, as JSON built in place from the
// Supervisor's pieces (read only, its clock's time). Nothing here sends or
// changes anything; the shell hands the text to whoever asked.
#pragma once

#include <string>
#include <vector>

#include "atl/core/stacks.hpp"
#include "atl/core/status_page.hpp"
#include "atl/supervisor/answers.hpp"
#include "atl/supervisor/supervisor.hpp"

namespace atl::supervisor {

// status -v / --json: the job, its pods and ranks (a page of them), runs,
// checks, burn figures, taints, goodput; `process_problems`: this process's
// own words about what does not hold in it (interposition_report()).
std::string info_json(const Supervisor& sup, const StatusPage& page,
                      const std::vector<std::string>& process_problems);

// The job's timeline, oldest first: {"time_ms", "kind", "text", "fault"}.
std::string events_json(const Supervisor& sup);

// The hang watch now, for /metrics: {"watching", "suspect", "timeout_ms",
// "idle_timeout_ms", "learned", "progress_age_ms": [per rank, null if never
// sampled], "vitals": [each running rank's figures]}.
std::string progress_json(const Supervisor& sup);

// The job's named actors: {"name", "owner", "calls", "pending"} each.
std::string actors_json(const Supervisor& sup);

// A burn's or check's round figures (the dashboard's charts); refused when
// the run is unknown or was dropped from the history.
Answer run_figures(const Supervisor& sup, RunId run);

// atlctl dashboard-url: JSON {url, token, ray (ray mode: Ray's dashboard,
// behind atl's login)}, or why there is none.
Answer dashboard_answer(const Supervisor& sup);

// atlctl taint -a list|set|remove [-n NODES|all]: the list, or the change
// made (a bad argument refuses the whole command and changes nothing).
Answer taint_command(Supervisor& sup, const std::string& action, const std::string& nodes);

// atlctl diagnose [-r RANKS]: which ranks' stacks to take ("" or "all":
// every rank), and from which pods' agents; refused before any rank started
// or for a bad rank list.
std::variant<Refusal, DiagnoseAsk> diagnose_ask(const Supervisor& sup, const std::string& ranks);

// The stacks taken for `ask`, grouped (groups by size with their ranks and
// top frame, the outliers and why, the ranks without a stack), with each
// asked rank's state, tool, top frame, collectives and GPUs; with its whole
// stack text when `with_stacks` (atlctl diagnose -o).
std::string diagnose_json(const Supervisor& sup, std::vector<StackReport> reports,
                          const DiagnoseAsk& ask, bool with_stacks);

}  // namespace atl::supervisor
