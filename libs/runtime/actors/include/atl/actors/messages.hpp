// Every message the actors exchange: atoms and the few structured types, with
// their inspect() functions. Registered on every node by configure_actor_system.
#pragma once

#include <caf/actor.hpp>
#include <caf/atom.hpp>
#include <caf/meta/type_name.hpp>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "atl/core/log_stream.hpp"
#include "atl/core/node_info.hpp"
#include "atl/core/orders.hpp"
#include "atl/core/process_messages.hpp"
#include "atl/core/requests.hpp"
#include "atl/core/run_status.hpp"
#include "atl/core/status_page.hpp"
#include "atl/core/task_status.hpp"
#include "atl/core/unsent_output.hpp"

namespace atl {

// Atoms: at most 10 characters.
using register_atom = caf::atom_constant<caf::atom("register")>;  // worker -> supervisor
using start_atom = caf::atom_constant<caf::atom("start")>;        // head main -> supervisor
using status_atom = caf::atom_constant<caf::atom("status")>;      // atlctl -> supervisor
using info_atom = caf::atom_constant<caf::atom("info")>;          // atlctl -> supervisor
using figures_atom = caf::atom_constant<caf::atom("figures")>;  // dashboard -> supervisor: a run's
using check_atom = caf::atom_constant<caf::atom("check")>;      // supervisor -> agent
using stop_atom = caf::atom_constant<caf::atom("stop")>;        // -> agent / executor
using kill_atom = caf::atom_constant<caf::atom("kill")>;        // executor's grace timer
using exited_atom = caf::atom_constant<caf::atom("exited")>;    // pump thread -> executor
using spawned_atom =
    caf::atom_constant<caf::atom("spawned")>;  // process thread -> executor: pid or why not
using timeout_atom = caf::atom_constant<caf::atom("timeout")>;           // timers
using expire_atom = caf::atom_constant<caf::atom("expire")>;             // a long poll's deadline
using journal_error_atom = caf::atom_constant<caf::atom("journal_er")>;  // journal -> supervisor
using cancel_atom = caf::atom_constant<caf::atom("cancel")>;             // signal thread -> actor
using log_atom = caf::atom_constant<caf::atom("log")>;                   // executor -> sink
using ack_atom = caf::atom_constant<caf::atom("ack")>;                   // sink -> executor
// agent -> executor: the node lost its head; hold unacknowledged output.
using sink_lost_atom = caf::atom_constant<caf::atom("sink_lost")>;
// agent -> supervisor -> sink: KeptOutput (atl/core/unsent_output.hpp),
// output a pod kept through its loss of the head, sent again as it rejoins.
// The supervisor's orders to agents and the sink are typed (atl/core/orders.hpp).
using watch_atom = caf::atom_constant<caf::atom("watch")>;  // supervisor -> sink: report to me
using disk_error_atom = caf::atom_constant<caf::atom("disk_err")>;  // sink -> supervisor
// atlctl's debug commands; each answers (int32 code, string text), code as
// atlctl's exit status (0 ok, 1 failed, 2 usage, 3 refused in this state);
// the rest are typed requests (StopWait, RunCommand, RunWait, Recover, …:
// atl/core/requests.hpp).
using debug_stop_atom =
    caf::atom_constant<caf::atom("dbg_stop")>;                  // -> (0, "<stop id>") or refused
using control_atom = caf::atom_constant<caf::atom("control")>;  // supervisor -> executor -> process
using progress_atom = caf::atom_constant<caf::atom("progress")>;  // atlctl progress
using diagnose_atom = caf::atom_constant<caf::atom("diagnose")>;  // an agent's stack collector
using gpu_fault_atom =
    caf::atom_constant<caf::atom("gpu_fault")>;  // NVML watch -> agent -> supervisor
using heartbeat_atom = caf::atom_constant<caf::atom("heartbeat")>;  // agent <-> supervisor
// agent -> supervisor (pod, why): this pod was told to go (SIGTERM); the
// answer is the job's grace in ms (int64), which its ranks then get.
using evicted_atom = caf::atom_constant<caf::atom("evicted")>;
using tick_atom = caf::atom_constant<caf::atom("tick")>;            // an actor's own periodic timer
using flush_atom = caf::atom_constant<caf::atom("flush")>;          // an agent's batch of reports
using sample_atom = caf::atom_constant<caf::atom("sample")>;        // an agent's own sampling timer
using taint_atom = caf::atom_constant<caf::atom("taint")>;          // atlctl -> supervisor
using probe_atom = caf::atom_constant<caf::atom("probe")>;          // supervisor -> agent: listen
using reach_atom = caf::atom_constant<caf::atom("reach")>;          // supervisor -> agent: connect
using events_atom = caf::atom_constant<caf::atom("events")>;        // atlctl -> supervisor
using dashboard_atom = caf::atom_constant<caf::atom("dashboard")>;  // atlctl -> supervisor
// Placement groups (the C API -> supervisor), each answered (code, text):
// a GroupRequest -> the group's JSON; GroupWait -> once placed, failed or
// removed; GroupRemove; cluster -> nodes with their resources, groups,
// pending demand.
using cluster_atom = caf::atom_constant<caf::atom("cluster")>;
// A group (true) or task (false) the asking driver made outlives it
// (lifetime="detached", a detached actor): (group, id) -> (code, text).
using disown_atom = caf::atom_constant<caf::atom("disown")>;
// Tasks (the C API -> supervisor), answered (code, text, status): a
// TaskRequest -> once started; TaskWait -> once ended ("done" false on its
// timeout); TaskKill. Output: a LogRead of the task's stream.
// Named actors, answered (code, text): register (name, the host's actor, who
// hosts it), ActorClose, ActorCall -> the reply bytes (the supervisor
// forwards it and answers for a host that died), list -> JSON. The host's
// actor answers a HostCall with a HostReply and a HostPing with true
// (atl/core/requests.hpp); call_atom is its own worker's.
using actor_reg_atom = caf::atom_constant<caf::atom("actor_reg")>;
using actor_list_atom = caf::atom_constant<caf::atom("actor_list")>;
using call_atom = caf::atom_constant<caf::atom("call")>;
using metrics_atom = caf::atom_constant<caf::atom("metrics")>;  // log sink: counters as JSON
// The web terminal (terminal_host.hpp): the dashboard's relay asks the
// supervisor for one into a pod (term_open: its id and the pod's agent, or
// why not), asks that pod's agent (term_open), whose terminal host runs the
// shell, and tells the supervisor whether it started (term_start); then
// keystrokes (term_in), window sizes (term_size) and acknowledged output
// bytes (term_ack) go from the relay to the host, output (term_out) and the
// end (term_ended) back; term_close from the relay ends it (to the host) and
// tells the timeline (to the supervisor).
using term_open_atom = caf::atom_constant<caf::atom("term_open")>;
using term_started_atom = caf::atom_constant<caf::atom("term_start")>;
using term_in_atom = caf::atom_constant<caf::atom("term_in")>;
using term_size_atom = caf::atom_constant<caf::atom("term_size")>;
using term_env_atom = caf::atom_constant<caf::atom("term_env")>;
using term_ack_atom = caf::atom_constant<caf::atom("term_ack")>;
// host -> relay (id, bytes): that much input went into the shell's terminal
// (or was dropped): the relay may send as much more (input's credit flow).
using term_inack_atom = caf::atom_constant<caf::atom("term_inack")>;
using term_out_atom = caf::atom_constant<caf::atom("term_out")>;
using term_ended_atom = caf::atom_constant<caf::atom("term_ended")>;
using term_close_atom = caf::atom_constant<caf::atom("term_close")>;

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, StreamId& x) {
  return f(caf::meta::type_name("atl::StreamId"), x.kind, x.run, x.rank);
}

// What a worker tells the supervisor when it joins.
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, NodeToolRequest& x) {
  return f(caf::meta::type_name("atl::NodeToolRequest"), x.kind, x.tools, x.duration, x.env,
           x.workers, x.sizes);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, GroupRequest& x) {
  return f(caf::meta::type_name("atl::GroupRequest"), x.name, x.strategy, x.bundles, x.timeout_ms);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, TaskRequest& x) {
  return f(caf::meta::type_name("atl::TaskRequest"), x.group, x.bundle, x.pod, x.command, x.env,
           x.working_dir, x.detached, x.restarts, x.own_group);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, PreflightRequest& x) {
  return f(caf::meta::type_name("atl::PreflightRequest"), x.step, x.host, x.port, x.working_dir);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, LogRead& x) {
  return f(caf::meta::type_name("atl::LogRead"), x.kind, x.streams, x.offsets, x.max_bytes, x.lines,
           x.since_ms, x.attempt, x.stamped);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, LogChunks& x) {
  return f(caf::meta::type_name("atl::LogChunks"), x.streams, x.bytes, x.next_offsets);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, PreflightReply& x) {
  return f(caf::meta::type_name("atl::PreflightReply"), x.problem, x.port);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, StopWait& x) {
  return f(caf::meta::type_name("atl::StopWait"), x.op);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, RunCommand& x) {
  return f(caf::meta::type_name("atl::RunCommand"), x.ranks, x.command, x.forced);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, RunWait& x) {
  return f(caf::meta::type_name("atl::RunWait"), x.run, x.timeout_ms);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, Recover&) {
  return f(caf::meta::type_name("atl::Recover"));
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, Diagnose& x) {
  return f(caf::meta::type_name("atl::Diagnose"), x.ranks, x.with_stacks);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, DeletePods& x) {
  return f(caf::meta::type_name("atl::DeletePods"), x.pods);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, GroupWait& x) {
  return f(caf::meta::type_name("atl::GroupWait"), x.id, x.timeout_ms);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, GroupRemove& x) {
  return f(caf::meta::type_name("atl::GroupRemove"), x.id);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, TaskWait& x) {
  return f(caf::meta::type_name("atl::TaskWait"), x.task, x.timeout_ms);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, StateWatch& x) {
  return f(caf::meta::type_name("atl::StateWatch"), x.seen, x.timeout_ms);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, TaskKill& x) {
  return f(caf::meta::type_name("atl::TaskKill"), x.task);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, ActorCall& x) {
  return f(caf::meta::type_name("atl::ActorCall"), x.name, x.bytes, x.timeout_ms);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, ActorClose& x) {
  return f(caf::meta::type_name("atl::ActorClose"), x.name);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, StackRequest& x) {
  return f(caf::meta::type_name("atl::StackRequest"), x.budget_ms, x.no_stop);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, HostCall& x) {
  return f(caf::meta::type_name("atl::HostCall"), x.bytes);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, HostReply& x) {
  return f(caf::meta::type_name("atl::HostReply"), x.code, x.bytes);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, HostPing&) {
  return f(caf::meta::type_name("atl::HostPing"));
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, StatusPage& x) {
  return f(caf::meta::type_name("atl::StatusPage"), x.rank_offset, x.rank_limit, x.pod_offset,
           x.pod_limit, x.run_offset, x.run_limit, x.trend);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, NodeInfo& x) {
  return f(caf::meta::type_name("atl::NodeInfo"), x.pod, x.address, x.interface, x.machine, x.cpus,
           x.gpus, x.memory, x.shm, x.resources, x.dns_name);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, ProcessLaunch& x) {
  return f(caf::meta::type_name("atl::ProcessLaunch"), x.stream, x.attempt, x.command, x.env,
           x.working_dir, x.control, x.scratch_dir, x.warn_signal, x.warn_ms, x.stop_at_once);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, ProcessExit& x) {
  return f(caf::meta::type_name("atl::ProcessExit"), x.stream, x.attempt, x.pod, x.code, x.signal,
           x.error, x.reason);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, ProcessStarted& x) {
  return f(caf::meta::type_name("atl::ProcessStarted"), x.stream, x.attempt, x.pod, x.pid);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, ProcessReports& x) {
  return f(caf::meta::type_name("atl::ProcessReports"), x.pod, x.started, x.ended);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, ProcessNote& x) {
  return f(caf::meta::type_name("atl::ProcessNote"), x.stream, x.attempt, x.pod, x.line);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, ProgressReport& x) {
  return f(caf::meta::type_name("atl::ProgressReport"), x.rank, x.attempt, x.lines, x.steps,
           x.cpu_ticks, x.state, x.pid, x.rss_bytes, x.io_bytes);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, StackReport& x) {
  return f(caf::meta::type_name("atl::StackReport"), x.rank, x.attempt, x.state, x.tool, x.text,
           x.error, x.gpus, x.helper_pids, x.helper_texts, x.collectives, x.collectives_error,
           x.flight_record);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, RunRankStatus& x) {
  return f(caf::meta::type_name("atl::RunRankStatus"), x.rank, x.pod, x.pid, x.started, x.done,
           x.code, x.signal, x.error);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, TaskStatus& x) {
  return f(caf::meta::type_name("atl::TaskStatus"), x.task, x.pod, x.group, x.bundle, x.pid,
           x.started, x.done, x.exit_code, x.signal, x.error, x.has_result, x.result,
           x.result_error);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, RunStatus& x) {
  return f(caf::meta::type_name("atl::RunStatus"), x.run, x.done, x.tracked, x.ranks, x.deadline);
}

// The head's answer to a node agent's registration (register_atom).
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, PodHeartbeat& x) {
  return f(caf::meta::type_name("atl::PodHeartbeat"), x.pod, x.gpus_present);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, PodProgress& x) {
  return f(caf::meta::type_name("atl::PodProgress"), x.pod, x.reports);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, PodGpuFault& x) {
  return f(caf::meta::type_name("atl::PodGpuFault"), x.pod, x.reason, x.xid);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, KeptOutput& x) {
  return f(caf::meta::type_name("atl::KeptOutput"), x.chunk.stream, x.chunk.attempt, x.chunk.offset,
           x.chunk.bytes, x.chunk.lines, x.pod);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, JoinTerms& x) {
  return f(caf::meta::type_name("atl::JoinTerms"), x.refusal, x.retry, x.heartbeat_interval_ms,
           x.heartbeat_timeout_ms, x.log_stream);
}

// The head's answer to a pod's registration: its terms, and (joined) where
// the pod's processes' output goes (and its own log lines).
struct JoinReply {
  JoinTerms terms;
  caf::actor sink;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, JoinReply& x) {
  return f(caf::meta::type_name("atl::JoinReply"), x.terms, x.sink);
}

// The head's orders (atl/core/orders.hpp).
namespace agent_order {
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, Fence& x) {
  return f(caf::meta::type_name("atl::agent_order::Fence"), x.why);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, Delete& x) {
  return f(caf::meta::type_name("atl::agent_order::Delete"), x.why);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, Launch& x) {
  return f(caf::meta::type_name("atl::agent_order::Launch"), x.ranks);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, Run& x) {
  return f(caf::meta::type_name("atl::agent_order::Run"), x.ranks);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, StopStream& x) {
  return f(caf::meta::type_name("atl::agent_order::StopStream"), x.stream, x.grace_ms);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, StopRanks& x) {
  return f(caf::meta::type_name("atl::agent_order::StopRanks"), x.grace_ms);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, Shutdown& x) {
  return f(caf::meta::type_name("atl::agent_order::Shutdown"), x.code);
}
}  // namespace agent_order

namespace sink_order {
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, Print& x) {
  return f(caf::meta::type_name("atl::sink_order::Print"), x.line);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, NewAttempt& x) {
  return f(caf::meta::type_name("atl::sink_order::NewAttempt"), x.attempt);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, KeepFile& x) {
  return f(caf::meta::type_name("atl::sink_order::KeepFile"), x.attempt, x.name, x.text);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, StreamsEnded& x) {
  return f(caf::meta::type_name("atl::sink_order::StreamsEnded"), x.kind, x.ids);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, ForgetStreams& x) {
  return f(caf::meta::type_name("atl::sink_order::ForgetStreams"), x.kind, x.ids);
}
}  // namespace sink_order

}  // namespace atl
