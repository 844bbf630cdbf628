// The requests to the supervisor that carry more than an id or two, as
// plain structs (their inspect() for CAF is in atl/actors/messages.hpp): a
// field has a name on both sides, never a place in a tuple of strings.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace atl {

// atlctl check|burn as sent: the kind ("check" or "burn"), -t, -d, -e, -w,
// --sizes, each as typed (the supervisor checks them all again).
struct NodeToolRequest {
  std::string kind;
  std::string tools;
  std::string duration;
  std::string env;
  std::string workers;
  std::string sizes;
};

// A driver's placement group (atl_pg_create): its name (may be empty), the
// strategy (PACK, SPREAD, STRICT_PACK, STRICT_SPREAD), the bundles as JSON
// ([{"CPU": 1, "GPU": 1}, ...]), how long the create waits to be placed.
struct GroupRequest {
  std::string name;
  std::string strategy;
  std::string bundles;
  std::int64_t timeout_ms = 0;
};

// A driver's task (atl_task_start): in bundle `bundle` of group `group` (0:
// none), on `pod` (empty: the least loaded), the command with its
// environment over the job's, in `working_dir` (empty: the job's).
struct TaskRequest {
  std::int64_t group = 0;
  std::int32_t bundle = 0;
  std::string pod;
  std::string command;
  std::vector<std::string> env;  // KEY=VALUE
  std::string working_dir;
};

// A pre-flight request (preflight.hpp's round): to a pod's node agent (its
// probe listener, a connect to another pod, its own check: working dir,
// GPUs, the way back to the head), or to the head's own dir checker.
struct PreflightRequest {
  enum Step : std::int32_t { head_dir = 0, probe = 1, reach = 2, check = 3 };
  std::int32_t step = check;
  std::string host;         // reach: the pod to connect to
  std::int32_t port = 0;    // reach: its probe's port
  std::string working_dir;  // check, head_dir: the job's (empty: the process's own)
};

// How one pre-flight request was answered (or not).
struct PreflightReply {
  std::string problem;      // empty: fine
  std::int32_t port = 0;    // probe: the port the pod listens on
  bool unanswered = false;  // no answer within the timeout: `problem` says why
};

}  // namespace atl
