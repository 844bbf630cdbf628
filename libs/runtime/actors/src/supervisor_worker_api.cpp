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
  const caf::actor* agent = self->state.peers.agent_of(*self->state.sup, pod);
  const bool ok = sender && (process && pod == head_pod_name(self->state.job().job_id)
                                 ? sender->node() == self->node()
                                 : agent && agent->node() == sender->node());
  if (!ok && process) {
    if (!agent && pod != head_pod_name(self->state.job().job_id))
      // A deleted, lost or fenced pod's last words (its ranks' ends, sent
      // as it went): late, not foreign.
      supervisor_log()->info("dropped a late report about pod '{}': it is no longer in the job",
                             pod);
    else
      supervisor_log()->warn("dropped a report about pod '{}' from a node that is not its own",
                             pod);
  }
  return ok;
}

// What a pod says of itself (its heartbeats, its ranks' progress, a GPU
// fault), taken only from the pod's own node.
template <class... Reports>
caf::message_handler pod_says(Actor* self) {
  return {[self](const Reports& r) {
    if (from_pod(self, r.pod)) self->state.sup->on(r);
  }...};
}

}  // namespace

caf::message_handler worker_api(Actor* self) {
  return caf::message_handler{
      [self](register_atom, const NodeInfo& info, const caf::actor& agent) {
        auto& st = self->state;
        const AgentId id = st.peers.agents.add(agent);
        JoinReply reply{st.sup->join(info, id), st.config.sink};
        if (reply.terms.joined()) {
          self->monitor(agent);  // joined: its processes' output to the sink
        } else {
          st.peers.agents.take(id);
          reply.sink = {};
        }
        return reply;
      },
      [self](evicted_atom, const std::string& pod, const std::string& why) -> std::int64_t {
        // Only from the pod's own node, as the heartbeats; the answer (the
        // job's grace, for its ranks) to anyone who asks.
        if (from_pod(self, pod)) self->state.sup->evicted(pod, why);
        return static_cast<std::int64_t>(self->state.job().grace.count());
      },
      [self](check_atom) { self->state.sup->all_in(); },
      [self](const ProcessStarted& started) {
        if (from_pod(self, started.pod, true)) self->state.sup->process_started(started);
      },
      [self](const ProcessExit& exit) {
        if (from_pod(self, exit.pod, true)) self->state.sup->process_ended(exit);
      },
      // A pod's batch (its node agent's): each report as if it came alone,
      // and only those about the pod it is from.
      [self](const ProcessReports& batch) {
        if (!from_pod(self, batch.pod, true)) return;
        for (const auto& started : batch.started)
          if (started.pod == batch.pod) self->state.sup->process_started(started);
        for (const auto& exit : batch.ended)
          if (exit.pod == batch.pod) self->state.sup->process_ended(exit);
      },
      [self](KeptOutput& kept) -> caf::result<bool> {
        // A rejoined pod's output from before its cut (UnsentOutput), for
        // the log of the attempt that wrote it.
        if (!from_pod(self, kept.pod, true) || !kept.well_formed()) return false;
        self->delegate(self->state.config.sink, std::move(kept));
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
      }}
      .or_else(pod_says<PodHeartbeat, PodProgress, PodGpuFault>(self));
}

}  // namespace atl::supervisor
