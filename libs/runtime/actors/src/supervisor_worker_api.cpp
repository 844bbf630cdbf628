// The JobSupervisor's interface for the job's own processes: a worker pod's
// node agent joining and its heartbeats, the pre-flight's go, and each
// process's reports (started, a control line, ended), accepted only from the
// node of the pod they name. Decode, call, answer.
#include <algorithm>

#include "atl/core/unsent_output.hpp"
#include "supervisor_state.hpp"

namespace atl::supervisor {

namespace {

// Whether the message came from the node of joined pod `pod`'s agent, or for
// a process's report (`process`) from this node about the head pod: a fenced
// or lost pod's late words, a peer speaking for another pod do not count (a
// process's report dropped is said in the log).
bool from_pod(Actor* self, const std::string& pod, bool process = false) {
  const auto& sender = self->current_sender();
  const caf::actor* agent = self->state.agent_of(pod);
  const bool ok = sender && (process && pod == head_pod_name(self->state.job().job_id)
                                 ? sender->node() == self->node()
                                 : agent && agent->node() == sender->node());
  if (!ok && process)
    supervisor_log()->warn("dropped a report about pod '{}' from a node that is not its own", pod);
  return ok;
}

}  // namespace

caf::message_handler worker_api(Actor* self) {
  return {
      [self](register_atom, const NodeInfo& info, const caf::actor& agent) {
        auto& st = self->state;
        const AgentId id = st.peers.agents.add(agent);
        auto refused = st.sup->join(info, id);
        if (refused) {
          st.peers.agents.take(id);
        } else {
          self->monitor(agent);
        }
        // Joined: its processes' output to the sink, and its own log lines
        // to logs/pod-worker-<i>.log (atlctl logs -p).
        const auto index = st.sup->pods().registry().index_of(info.pod).value_or(0);
        const HeartbeatOptions& hb = st.job().heartbeat;
        return JoinReply{refused ? refused->text : std::string(),
                         refused && refused->retry,
                         hb.interval.count(),
                         hb.timeout.count(),
                         refused ? caf::actor{} : st.config.sink,
                         StreamId::pod_log(static_cast<std::int32_t>(index))};
      },
      [self](evicted_atom, const std::string& pod, const std::string& why) -> std::int64_t {
        // Only from the pod's own node, as the heartbeats; the answer (the
        // job's grace, for its ranks) to anyone who asks.
        if (from_pod(self, pod)) self->state.sup->evicted(pod, why);
        return static_cast<std::int64_t>(self->state.job().grace.count());
      },
      [self](progress_atom, const std::string& pod, const std::vector<ProgressReport>& reports) {
        // Only from the pod's own node, as the heartbeats.
        if (from_pod(self, pod)) self->state.sup->progress(pod, reports);
      },
      [self](heartbeat_atom, const std::string& pod, std::int32_t gpus_present) {
        // Only from the pod's own node: a fenced pod's late words do not count.
        if (from_pod(self, pod)) self->state.sup->heartbeat(pod, gpus_present);
      },
      [self](gpu_fault_atom, const std::string& pod, const std::string& reason, std::int32_t) {
        // The pod's NVML watch saw a fault (a critical Xid, a lost GPU, a
        // double-bit ECC error, a row remap pending): as a GPU gone missing.
        if (from_pod(self, pod)) self->state.sup->gpu_fault(pod, reason);
      },
      [self](check_atom) { self->state.sup->all_in(); },
      [self](const ProcessStarted& started) {
        if (from_pod(self, started.pod, true)) self->state.sup->process_started(started);
      },
      [self](const ProcessExit& exit) {
        if (from_pod(self, exit.pod, true)) self->state.sup->process_ended(exit);
      },
      [self](kept_log_atom, const StreamId& stream, std::int32_t attempt, std::int64_t offset,
             std::string& bytes, std::int32_t lines, const std::string& pod) -> caf::result<bool> {
        // A rejoined pod's output from before its cut (UnsentOutput), for
        // the log of the attempt that wrote it; only user code's streams.
        if (!from_pod(self, pod, true) || !stream.is_user_code() || attempt < 1 || offset < 0 ||
            lines < 0 || bytes.size() > UnsentOutput::kMaxChunkBytes)
          return false;
        self->delegate(self->state.config.sink, kept_log_atom::value, stream, attempt, offset,
                       std::move(bytes), lines, pod);
        return caf::delegated<bool>{};
      },
      [self](const ProcessNote& note) {
        // Its answer (a burn's rendezvous) goes back through the executor
        // that forwarded it, kept until then.
        if (!from_pod(self, note.pod, true)) return;
        auto& st = self->state;
        const ExecutorRef from =
            st.peers.executors.add(caf::actor_cast<caf::actor>(self->current_sender()));
        if (!st.sup->process_note(note, from)) st.peers.executors.take(from);
      }};
}

}  // namespace atl::supervisor
