// The requests to the supervisor that carry more than an id or two, as
// plain structs (their inspect() for CAF is in atl/actors/messages.hpp): a
// field has a name on both sides, never a place in a tuple of strings.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "atl/core/log_stream.hpp"
#include "atl/core/process_messages.hpp"

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
// `detached`: it outlives the driver that started it (atl_disown from the
// start); `restarts` (a detached task's): how many times the head starts it
// again when it ends other than by a kill (-1: without end; Ray's
// max_restarts of a detached actor, whose maker may be long gone);
// `own_group` (a detached task's): `group` is its own reservation, removed
// by the head when the task ends for good.
struct TaskRequest {
  std::int64_t group = 0;
  std::int32_t bundle = 0;
  std::string pod;
  std::string command;
  std::vector<std::string> env;  // KEY=VALUE
  std::string working_dir;
  bool detached = false;
  std::int32_t restarts = 0;
  bool own_group = false;
};

// How one pre-flight request was answered.
struct PreflightReply {
  std::string problem;    // empty: fine
  std::int32_t port = 0;  // probe: the port the pod listens on
};

// atlctl's debug commands and the C API's waits, each answered with a code
// and a line (a run's and a task's with their status too); the waits are
// kept at the head until their answer is there or `timeout_ms` passes.
struct StopWait {  // atlctl stop: until stop `op` is done
  std::int32_t op = 0;
};
struct RunCommand {  // atlctl run -r RANKS COMMAND (-f: in a state that refuses it otherwise)
  std::string ranks;
  std::string command;
  bool forced = false;
};
struct RunWait {  // until run `run` ends (0 ms: its state now)
  std::int32_t run = 0;
  std::int64_t timeout_ms = 0;
};
struct Recover {};  // atlctl recover: until every rank started again
struct Diagnose {   // atlctl diagnose -r RANKS: the ranks' stacks (-o: with them)
  std::string ranks;
  bool with_stacks = false;
};
struct DeletePods {  // atlctl delete -p SPEC|all
  std::string pods;
};
struct GroupWait {  // pg_wait: until group `id` is placed, fails or goes
  std::int64_t id = 0;
  std::int64_t timeout_ms = 0;
};
struct GroupRemove {
  std::int64_t id = 0;
};
struct TaskWait {  // until task `task` ends (0 ms: its state now)
  std::int32_t task = 0;
  std::int64_t timeout_ms = 0;
};
struct TaskKill {
  std::int32_t task = 0;
};
struct StateWatch {  // status -w: the job's state changes after change `seen` (0: none seen)
  std::uint64_t seen = 0;
  std::int64_t timeout_ms = 0;  // held at most this long when none is new
};
struct ActorCall {  // a named actor's call: its host's answer, within `timeout_ms`
  std::string name;
  std::string bytes;
  std::int64_t timeout_ms = 0;
};
struct ActorClose {  // its host closes `name`
  std::string name;
};

// A pre-flight request (preflight.hpp's round): to a pod's node agent (its
// probe listener, a connect to another pod, its own check: working dir,
// GPUs, the way back to the head), or to the head pod's agent (its dir).
struct PreflightRequest {
  using Reply = PreflightReply;
  enum Step : std::int32_t { head_dir = 0, probe = 1, reach = 2, check = 3 };
  std::int32_t step = check;
  std::string host;         // reach: the pod to connect to
  std::int32_t port = 0;    // reach: its probe's port
  std::string working_dir;  // check, head_dir: the job's (empty: the process's own)
};

// To a pod's agent: its running ranks' stacks, taken within `budget_ms`;
// the ranks in `no_stop` (computing, as the hang watch sees them) only by a
// read that stops nothing (py-spy), never by gdb's attach.
struct StackRequest {
  using Reply = std::vector<StackReport>;
  std::int64_t budget_ms = 0;
  std::vector<std::int32_t> no_stop;
};

// To a named actor's host: a call's bytes (answered with the handler's code
// and bytes), and the head's ping (answered true while the host lives).
struct HostReply {
  std::int32_t code = 0;
  std::string bytes;
};
struct HostCall {
  using Reply = HostReply;
  std::string bytes;
};
struct HostPing {
  using Reply = bool;
};

// A read of the job's logs (atlctl logs, run and the debug commands, the C
// API's task output), answered by the head's LogReader with LogChunks.
struct LogRead {
  enum Kind : std::int32_t {
    from = 0,   // each stream's bytes past its offset, in order, max_bytes in all
    tail = 1,   // the last `lines` lines of streams[0]
    since = 2,  // where each stream's lines since since_ms start (offsets only)
  };
  std::int32_t kind = from;
  std::vector<StreamId> streams;
  std::vector<std::int64_t> offsets;  // from: one per stream
  std::int64_t max_bytes = 0;         // from
  std::int64_t lines = 0;             // tail
  std::int64_t since_ms = 0;          // since: unix time in ms
  std::int32_t attempt = 0;           // attempt K's files (0: the current one)
  bool stamped = false;               // each line with its time in front
};

// A LogRead's answer: from: the streams that had bytes, tail: the one asked,
// since: every stream asked (no bytes); each with its bytes and the offset
// to read on from (since: where its lines start; tail: the file's end).
struct LogChunks {
  std::vector<StreamId> streams;
  std::vector<std::string> bytes;
  std::vector<std::int64_t> next_offsets;
};

}  // namespace atl
